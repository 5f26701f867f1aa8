package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
)

// recordStringFields are the record fields that hold strings; the others hold numbers.
var recordStringFields = map[Field]bool{RUnique: true, RAttributes: true, RPayload: true, RError: true, RResult: true, RCallback: true, RAttempt: true}

// TestRecordDecodesBothCodecs: records that lib.lua's encode writes, with cmsgpack and with the
// plain codec, decode to the fields they were made of, at every size where msgpack changes form
// (negative numbers too), with and without a traced nack's RAttempt, and a msgpack record written
// before callbacks (19 fields) decodes with no callback. Every shorter prefix of a msgpack record is refused, not misread.
func TestRecordDecodesBothCodecs(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nums := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1764000000123,
		-1, -32, -33, -128, -129, -32768, -32769, -1 << 31, -1<<31 - 1, -1764000000123}
	sizes := []int{0, 1, 31, 32, 255, 256, 65535, 65536}
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	// ARGV[1] is the number of fields; the fields follow, numbers as decimal strings.
	body := string(lib) + `
bind(KEYS, {'c', '1', '0', '0', '0', '0'}, CODEC)
local strings = STRINGS
local r = {}
for i = 1, tonumber(ARGV[1]) do
  if strings[i] then r[i] = ARGV[1 + i] else r[i] = tonumber(ARGV[1 + i]) end
end
return encode(r)`
	var strs []string
	for i := range Field(recordFields) {
		if recordStringFields[i] {
			strs = append(strs, fmt.Sprintf("[%d] = true", i+1))
		}
	}
	body = strings.ReplaceAll(body, "STRINGS", "{"+strings.Join(strs, ", ")+"}")
	for _, codec := range []string{"cmsgpack", "nil"} {
		script := strings.ReplaceAll(body, "CODEC", codec)
		for i := range nums {
			// most records end at RCallback, one that a traced nack made at RAttempt, and one
			// written before callbacks at RFinished (msgpack only: the plain codec came later)
			fields := recordFields - i%2
			if codec == "cmsgpack" {
				fields = recordFields - i%3
			}
			var want Record
			args := []any{fields}
			for k := range fields {
				if recordStringFields[Field(k)] {
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
			var got Record
			err = decodeRecord(raw, &got)
			if err != nil || got != want {
				t.Fatalf("%s, case %d: decoded %+v, %v\nwant %+v", codec, i, got, err, want)
			}
			if codec == "cmsgpack" {
				for cut := range len(raw) {
					if cut > 300 && cut < len(raw)-300 {
						continue // the cuts through a long string are all alike
					}
					if err := decodeRecord(raw[:cut], &Record{}); err == nil {
						t.Fatalf("case %d: the first %d of %d bytes decoded without an error", i, cut, len(raw))
					}
				}
			}
		}
	}
}

// TestConsumeSkipsARecordItCannotRead: a record with a field after R_ATTEMPT (a later version's)
// is read without it; one whose extra field is of a kind records never hold cannot be read, and
// its consume still delivers the call's other jobs, logs the one it left out and leaves it leased,
// to come back when its lease ends.
func TestConsumeSkipsARecordItCannotRead(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	var log testio.Buffer
	s, ctx := newTestStoreLogging(t, env, slog.New(slog.NewTextHandler(&log, nil)))
	var ids []string
	for _, payload := range []string{"first", "later-field", "unreadable", "last"} {
		j := newJob(payload)
		publish(t, ctx, s, "ns", "q", j)
		ids = append(ids, j.ID)
	}
	const extend = `local r = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1]))
		r[21] = '1 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
		if ARGV[2] == 'string' then r[22] = 'x' else r[22] = true end
		return redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(r))`
	jobs := []string{s.keys.get("ns", "q").jobs()}
	if err := env.Client.Eval(ctx, extend, jobs, ids[1], "string").Err(); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Eval(ctx, extend, jobs, ids[2], "bool").Err(); err != nil {
		t.Fatal(err)
	}
	leased, err := s.Consume(ctx, "ns", "q", 4, 0)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	var got []string
	for _, j := range leased.Jobs {
		got = append(got, j.Str(RPayload))
	}
	if strings.Join(got, ",") != "first,later-field,last" {
		t.Fatalf("Consume delivered %q, want first, later-field and last", got)
	}
	if !strings.Contains(log.String(), "cannot be read") || !strings.Contains(log.String(), ids[2]) {
		t.Errorf("nothing logged about %s: %q", ids[2], log.String())
	}
	if held, err := env.Client.HGet(ctx, s.keys.get("ns", "q").lease(), ids[2]).Result(); err != nil || !strings.HasPrefix(held, "1:") {
		t.Errorf("the unreadable job's lease: %q, %v; want delivery 1 and its start", held, err)
	}
}
