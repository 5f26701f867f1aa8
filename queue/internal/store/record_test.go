package store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// The records the client encodes for publish_ready.lua, in two pieces around Redis's time or whole
// (stamped), are, byte for byte, what Redis's cmsgpack makes of the same fields, at every size where
// msgpack changes form.
func TestReadyRecordEncodesAsCmsgpack(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const pack = `return cmsgpack.pack({2, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[2]), 0, 0, 0,
		tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[6]),
		0, '', ARGV[7], ARGV[8], '', '', 0, ''})`
	nums := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1764000000123}
	sizes := []int{0, 1, 31, 32, 255, 256, 65535, 65536}
	for i, n := range nums {
		size := sizes[i%len(sizes)]
		f := NewJob{
			Priority: n % 256, Tries: max(n, 1), TTRMs: n, BackoffBaseMs: nums[(i+3)%len(nums)],
			BackoffMaxMs: nums[(i+5)%len(nums)], Payload: bytes.Repeat([]byte{0xff}, size),
			Attributes: strings.Repeat("a", sizes[(i+1)%len(sizes)]),
		}
		now := nums[(i+7)%len(nums)]
		want, err := env.Client.Eval(ctx, pack, nil, f.Priority, f.Tries, f.TTRMs, f.BackoffBaseMs,
			f.BackoffMaxMs, now, f.Attributes, f.Payload).Text()
		if err != nil {
			t.Fatal(err)
		}
		head, tail := readyRecordAround(&f)
		got := head + string(appendMsgpackInt(appendMsgpackInt(nil, now), now)) + tail
		if got != want {
			t.Fatalf("case %d (number %d, payload %d bytes): encoded\n%x\ncmsgpack made\n%x", i, n, size, got, want)
		}
		if got := encodeStampedRecord(&f, now); got != want {
			t.Fatalf("case %d (number %d, payload %d bytes): stamped\n%x\ncmsgpack made\n%x", i, n, size, got, want)
		}
	}
}

// A job due now is stored as the same record, but for the times, whichever script publishes it:
// publish_ready.lua (a lone job without a ttl, the record in two pieces around Redis's time or
// whole, stamped by the client's reading of Redis's clock) and publish_batch.lua (a batch) with
// records the client encoded, and publish.lua with the record built in Lua; with and without a ttl.
func TestPublishScriptsStoreTheSameRecord(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s, ctx := newTestStore(t, env)
		if !s.publishesReady(ctx) {
			t.Fatal("the store does not take publish_ready.lua and publish_batch.lua")
		}
		k := s.keys.get("ns", "q")
		// The record with R_PUBLISHED, R_DUE and R_EXPIRE zeroed, encoded again by cmsgpack, once
		// checked that the job is due when published and expires ttl after.
		const timeless = `local r = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1]))
			if r[11] ~= r[12] then return redis.error_reply('published and due differ') end
			local want = 0
			if r[6] > 0 then want = r[11] + r[6] end
			if r[7] ~= want then return redis.error_reply('expiry is not publish + ttl') end
			r[7], r[11], r[12] = 0, 0, 0
			return cmsgpack.pack(r)`
		for _, ttl := range []time.Duration{0, time.Hour} {
			jobs := make([]*NewJob, 4)
			for i := range jobs {
				jobs[i] = newJob("payload")
				jobs[i].Priority, jobs[i].TTLMs, jobs[i].TTRMs = 7, ttl.Milliseconds(), 90_000
				jobs[i].BackoffBaseMs, jobs[i].BackoffMaxMs = 1000, 60_000
				jobs[i].Attributes = `{"k":"v"}`
			}
			records := map[string]string{}
			publish := map[string]func() error{
				"publish.lua": func() error {
					_, err := s.run(ctx, scriptPublish, k, publishArgs(jobs[:1])...).Result()
					return err
				},
				"publish_batch.lua": func() error { _, err := s.publishBatch(ctx, k, jobs[1:2]); return err },
			}
			if ttl == 0 {
				// The first lone publish has no reading of Redis's clock (TIME in the script), the
				// second the reading the first one's answer gave (stamped).
				s.clocks = newRedisClocks(env.Client, time.Now)
				publish["publish_ready.lua, Redis's time"] = func() error { _, err := s.publishReady(ctx, k, jobs[2]); return err }
				publish["publish_ready.lua, stamped"] = func() error {
					if _, ok := s.clocks.nowMs(s.clocks.of(ctx, k.jobs())); !ok {
						return errors.New("no reading of Redis's clock after a publish_ready.lua call")
					}
					_, err := s.publishReady(ctx, k, jobs[3])
					return err
				}
			}
			for i, name := range []string{"publish.lua", "publish_batch.lua", "publish_ready.lua, Redis's time", "publish_ready.lua, stamped"} {
				if publish[name] == nil {
					continue
				}
				if err := publish[name](); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				rec, err := env.Client.Eval(ctx, timeless, []string{k.jobs()}, jobs[i].ID).Text()
				if err != nil {
					t.Fatalf("%s, ttl %v: %v", name, ttl, err)
				}
				records[name] = rec
				j, err := s.Get(ctx, "ns", "q", jobs[i].ID)
				if err != nil {
					t.Fatal(err)
				}
				if j.Num(RState) != StateReady || j.Str(RPayload) != "payload" || j.Num(RPriority) != 7 ||
					j.Num(RTTL) != ttl.Milliseconds() || j.Str(RAttributes) != `{"k":"v"}` {
					t.Fatalf("%s, ttl %v: Get shows %+v", name, ttl, j)
				}
			}
			for name, rec := range records {
				if rec != records["publish.lua"] {
					t.Errorf("ttl %v: %s stored\n%x\npublish.lua stored\n%x", ttl, name, rec, records["publish.lua"])
				}
			}
		}
		st, err := s.Stats(ctx, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != 6 || st.Published != 6 {
			t.Fatalf("stats: %d ready, %d published; want 6 and 6", st.Ready, st.Published)
		}
		if n, err := env.Client.ZCard(ctx, k.all[5]).Result(); err != nil || n != 2 {
			t.Fatalf("%d jobs in the expiry index (%v), want the 2 with a ttl", n, err)
		}
	})
}
