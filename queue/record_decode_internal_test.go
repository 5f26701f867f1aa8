package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// recordStringFields are the record fields that hold strings; the others hold numbers.
var recordStringFields = map[int]bool{rUnique: true, rAttributes: true, rPayload: true, rError: true, rResult: true, rCallback: true}

// TestRecordDecodesBothCodecs: records that lib.lua's encode writes, with cmsgpack and with the
// plain codec, decode to the fields they were made of, at every size where msgpack changes form
// (negative numbers too), and a msgpack record written before callbacks (19 fields) decodes with
// no callback. Every shorter prefix of a msgpack record is refused, not misread.
func TestRecordDecodesBothCodecs(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nums := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1764000000123,
		-1, -32, -33, -128, -129, -32768, -32769, -1 << 31, -1<<31 - 1, -1764000000123}
	sizes := []int{0, 1, 31, 32, 255, 256, 65535, 65536}
	// ARGV[1] is the number of fields; the fields follow, numbers as decimal strings.
	body := mustRead("lib.lua") + `
bind(KEYS, {'c', '1', '0', '0', '0', '0'}, CODEC)
local strings = STRINGS
local r = {}
for i = 1, tonumber(ARGV[1]) do
  if strings[i] then r[i] = ARGV[1 + i] else r[i] = tonumber(ARGV[1 + i]) end
end
return encode(r)`
	var strs []string
	for i := range recordFields {
		if recordStringFields[i] {
			strs = append(strs, fmt.Sprintf("[%d] = true", i+1))
		}
	}
	body = strings.ReplaceAll(body, "STRINGS", "{"+strings.Join(strs, ", ")+"}")
	for _, codec := range []string{"cmsgpack", "nil"} {
		script := strings.ReplaceAll(body, "CODEC", codec)
		for i := range nums {
			fields := recordFields
			if codec == "cmsgpack" {
				fields -= i % 2 // every other record is one of before callbacks
			}
			var want jobRecord
			args := []any{fields}
			for k := range fields {
				if recordStringFields[k] {
					size := sizes[(i+k)%len(sizes)]
					want.str[k] = strings.Repeat("n:;s\xff", size/5+1)[:size]
					args = append(args, want.str[k])
				} else {
					want.num[k] = nums[(i+k)%len(nums)]
					args = append(args, want.num[k])
				}
			}
			raw, err := env.Client.Eval(ctx, script, nil, args...).Text()
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeRecord(raw)
			if err != nil || got != want {
				t.Fatalf("%s, case %d: decoded %+v, %v\nwant %+v", codec, i, got, err, want)
			}
			if codec == "cmsgpack" {
				for cut := range len(raw) {
					if cut > 300 && cut < len(raw)-300 {
						continue // the cuts through a long string are all alike
					}
					if _, err := decodeRecord(raw[:cut]); err == nil {
						t.Fatalf("case %d: the first %d of %d bytes decoded without an error", i, cut, len(raw))
					}
				}
			}
		}
	}
}

// TestConsumeShowsWhatGetShows: a consumed job, whose fields the client decodes from its stored
// record (lease_popped), is the delivery Get shows for it (reply_job, built in Lua), for jobs with
// every field set, from both publish scripts.
func TestConsumeShowsWhatGetShows(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, ctx := newInternalClient(t, env)
		full := PublishParams{
			Namespace: "ns", Queue: "q", Payload: []byte("payload"), Priority: 3, Tries: 5,
			TTL: time.Hour, TTR: 90 * time.Second, Backoff: Backoff{Base: time.Second, Max: time.Minute},
			UniqueKey: "u", Attributes: map[string]string{"k": "v"},
		}
		plain := PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("plain"), Priority: 3}
		for _, p := range []PublishParams{full, plain} {
			if _, err := c.Publish(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := c.Consume(ctx, ConsumeParams{Namespace: "ns", Queues: []string{"q"}, Count: 2})
		if err != nil || len(ds) != 2 {
			t.Fatalf("Consume: %d jobs, %v", len(ds), err)
		}
		for _, d := range ds {
			j, err := c.Get(ctx, "ns", "q", d.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := j.delivery()
			want.Elapsed = d.Elapsed
			if fmt.Sprint(d) != fmt.Sprint(want) || j.State != StateLeased {
				t.Errorf("Consume gave\n%+v\nGet shows (%s)\n%+v", d, j.State, want)
			}
		}
		if ds[0].Attributes["k"] != "v" || ds[0].Delivery != 1 || ds[0].RemainingTries != 4 || ds[0].ExpiresAt.IsZero() {
			t.Errorf("the full job: %+v", ds[0])
		}
	})
}
