package queue

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue/internal/store"
)

// TestFinishTwiceInOneBatch: when one combined ack call names a job twice (Finish and Finish, or
// Ack and Finish), the second entry finds the job gone (ErrNotFound), as a later call would.
func TestFinishTwiceInOneBatch(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c, ctx := newInternalClient(t, env)

	lease := func(q string) Delivery {
		t.Helper()
		if _, err := c.Publish(ctx, PublishParams{Namespace: "ns", Queue: q}); err != nil {
			t.Fatal(err)
		}
		ds, err := c.Consume(ctx, ConsumeParams{Namespace: "ns", Queues: []string{q}})
		if err != nil || len(ds) != 1 {
			t.Fatalf("Consume: %d jobs, %v", len(ds), err)
		}
		return ds[0]
	}
	finish := func(d Delivery) store.Ack {
		return store.Ack{Namespace: "ns", Queue: d.Queue, ID: d.ID, Delivery: store.FinishAny}
	}
	ack := func(d Delivery) store.Ack {
		return store.Ack{Namespace: "ns", Queue: d.Queue, ID: d.ID, Delivery: d.Delivery}
	}

	for _, tc := range []struct {
		name  string
		batch func(d Delivery) []store.Ack
	}{
		{"finish+finish", func(d Delivery) []store.Ack { return []store.Ack{finish(d), finish(d)} }},
		{"ack+finish", func(d Delivery) []store.Ack { return []store.Ack{ack(d), finish(d)} }},
	} {
		d := lease(tc.name[:3] + "q")
		out, err := c.runAck(ctx, "", tc.batch(d))
		if err != nil {
			t.Fatal(err)
		}
		if err := ackError(out[0]); err != nil {
			t.Fatalf("%s: first = %v", tc.name, err)
		}
		// Sequentially the second call finds the job gone: ErrNotFound, which lmstfy ignores.
		if err := ackError(out[1]); err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s in one batch: Finish = %v, want nil or ErrNotFound (as when the calls run one after the other)", tc.name, err)
		}
	}
}
