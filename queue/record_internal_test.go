package queue

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// The record the client encodes for publish_ready.lua is, byte for byte, what Redis's cmsgpack
// makes of the same fields, at every size where msgpack changes form.
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
		f := jobFields{
			priority: n % 256, tries: max(n, 1), ttrMs: n, backoffBaseMs: nums[(i+3)%len(nums)],
			backoffMaxMs: nums[(i+5)%len(nums)], payload: bytes.Repeat([]byte{0xff}, size),
			attributes: strings.Repeat("a", sizes[(i+1)%len(sizes)]),
		}
		now := nums[(i+7)%len(nums)]
		want, err := env.Client.Eval(ctx, pack, nil, f.priority, f.tries, f.ttrMs, f.backoffBaseMs,
			f.backoffMaxMs, now, f.attributes, f.payload).Text()
		if err != nil {
			t.Fatal(err)
		}
		head, tail := readyRecordAround(&f)
		got := head + string(appendMsgpackInt(appendMsgpackInt(nil, now), now)) + tail
		if got != want {
			t.Fatalf("case %d (number %d, payload %d bytes): encoded\n%x\ncmsgpack made\n%x", i, n, size, got, want)
		}
	}
}

// A lone job due now (publish_ready.lua, the record encoded by the client) and the same job in a
// batch (publish.lua, the record built in Lua) are stored as the same record, but for the times.
func TestPublishReadyStoresTheRecordPublishDoes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, ctx := newInternalClient(t, env)
		p := PublishParams{
			Namespace: "ns", Queue: "q", Payload: []byte("payload"), Priority: 7, Tries: 3,
			TTR: 90 * time.Second, Backoff: Backoff{Base: time.Second, Max: time.Minute},
			Attributes: map[string]string{"k": "v"},
		}
		lone, err := c.validateJob(p)
		if err != nil {
			t.Fatal(err)
		}
		if !lone.dueNowPlain() || !c.publishesReady(ctx) {
			t.Fatal("the lone job does not take publish_ready.lua")
		}
		batch := []publishReq{{ns: "ns", q: "q"}, {ns: "ns", q: "q"}}
		for i := range batch {
			if batch[i].job, err = c.validateJob(p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.runPublish(ctx, "", []publishReq{{ns: "ns", q: "q", job: lone}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.runPublish(ctx, "", batch); err != nil {
			t.Fatal(err)
		}
		// The record without R_PUBLISHED and R_DUE, encoded again by cmsgpack.
		const timeless = `local r = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1]))
			if r[11] ~= r[12] then return redis.error_reply('published and due differ') end
			r[11], r[12] = 0, 0
			return cmsgpack.pack(r)`
		k := c.keys.get("ns", "q")
		want, err := env.Client.Eval(ctx, timeless, []string{k.jobs()}, batch[0].job.id).Text()
		if err != nil {
			t.Fatal(err)
		}
		got, err := env.Client.Eval(ctx, timeless, []string{k.jobs()}, lone.id).Text()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("publish_ready.lua stored\n%x\npublish.lua stored\n%x", got, want)
		}
		j, err := c.Get(ctx, "ns", "q", lone.id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != StateReady || string(j.Payload) != "payload" || j.Priority != 7 || j.Attributes["k"] != "v" {
			t.Fatalf("Get of the lone job: %+v", j)
		}
		st, err := c.Stats(ctx, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != 3 || st.Published != 3 {
			t.Fatalf("stats: %d ready, %d published; want 3 and 3", st.Ready, st.Published)
		}
	})
}
