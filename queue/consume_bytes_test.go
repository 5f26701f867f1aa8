package queue_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// A consume of many large jobs answers at most MaxConsumeBytes of them, and leases exactly the
// jobs it answers: the rest stay ready, in order, for the next consume.
func TestConsumeAnswerIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		const jobBytes, limit = 64 << 10, 1 << 20
		f := setup(t, env, queue.Config{MaxConsumeBytes: limit})
		var ids []string
		for i := range 100 {
			ids = append(ids, f.publish(t, queue.PublishParams{Queue: "q", Payload: bytes.Repeat([]byte{byte(i)}, jobBytes)}))
		}
		var got []string
		for len(got) < len(ids) {
			jobs, err := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: []string{"q"}, Count: 1000, TTR: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			answered := 0
			for _, d := range jobs {
				answered += len(d.Payload)
				got = append(got, d.ID)
			}
			if len(jobs) == 0 || answered > limit {
				t.Fatalf("a consume answered %d jobs, %d payload bytes; want 1 or more within %d", len(jobs), answered, limit)
			}
			if s := f.stats(t, "q"); s.Leased != int64(len(got)) || s.Ready != int64(len(ids)-len(got)) {
				t.Fatalf("after answers of %d jobs: %+v; want exactly those leased, the rest ready", len(got), s)
			}
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Fatalf("job %d delivered is %s, want %s (publish order)", i, got[i], ids[i])
			}
		}
		if s := f.stats(t, "q"); s.Consumed != int64(len(ids)) {
			t.Fatalf("consumed %d times, want each of the %d jobs once", s.Consumed, len(ids))
		}
	})
}

// A job larger than the bound is still delivered (alone), and a consume of several queues stops
// when the bound is reached: a later queue's large job waits for the next consume.
func TestConsumeBoundKeepsLargeJobsDeliverable(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{MaxConsumeBytes: 100 << 10})
	big := f.publish(t, queue.PublishParams{Queue: "a", Payload: bytes.Repeat([]byte("b"), 300<<10)})
	small := f.publish(t, queue.PublishParams{Queue: "a", Payload: []byte("s")})
	other := f.publish(t, queue.PublishParams{Queue: "b", Payload: bytes.Repeat([]byte("o"), 60<<10)})
	consume := func() []string {
		jobs, err := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: []string{"a", "b"}, Count: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range jobs {
			ids = append(ids, d.ID)
		}
		return ids
	}
	if got := consume(); len(got) != 1 || got[0] != big {
		t.Fatalf("first consume = %v, want the large job %s alone", got, big)
	}
	if got := consume(); len(got) != 2 || got[0] != small || got[1] != other {
		t.Fatalf("second consume = %v, want %s then %s", got, small, other)
	}
	if a, b := f.stats(t, "a"), f.stats(t, "b"); a.Leased != 2 || b.Leased != 1 || a.Ready+b.Ready != 0 {
		t.Fatalf("stats a %+v b %+v: want every job leased once", a, b)
	}
}
