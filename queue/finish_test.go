package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// TestFinishOfExpiredWaitingJob: a waiting job past its ttl is gone to users, so Finish answers
// ErrNotFound and the job counts as expired, not deleted.
func TestFinishOfExpiredWaitingJob(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	for _, p := range []queue.PublishParams{
		{Queue: "delayed", Delay: 50 * time.Millisecond, TTL: 100 * time.Millisecond},
		{Queue: "ready", TTL: 50 * time.Millisecond},
	} {
		id := f.publish(t, p)
		testwait.Until(t, 30*time.Second, "the ttl to pass", func() bool {
			_, err := f.client.Get(ctx, f.ns, p.Queue, id)
			return errors.Is(err, queue.ErrNotFound)
		})
		err := f.client.Finish(ctx, f.ns, p.Queue, id)
		s := f.stats(t, p.Queue)
		if !errors.Is(err, queue.ErrNotFound) || s.Deleted != 0 {
			t.Errorf("%s: Finish of a job Get reports gone = %v (want ErrNotFound); stats deleted %d expired %d (want 0, and 1 once housekeeping runs)", p.Queue, err, s.Deleted, s.Expired)
		}
	}
}

// TestFinishOfDoneJobKeepsResult: Finish of a job acked with a result answers ErrNotFound and
// leaves the result in place.
func TestFinishOfDoneJobKeepsResult(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	f.publish(t, queue.PublishParams{Queue: "q"})
	d := f.consumeOne(t, "q")
	if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery, Result: []byte("r")}); err != nil {
		t.Fatal(err)
	}
	err := f.client.Finish(ctx, f.ns, "q", d.ID)
	j, gerr := f.client.Get(ctx, f.ns, "q", d.ID)
	s := f.stats(t, "q")
	if gerr != nil || s.Deleted != 0 {
		t.Fatalf("Finish of a done job = %v; then Get = %v, %v; stats acked %d deleted %d done %d (want the result kept, deleted 0)",
			err, j, gerr, s.Acked, s.Deleted, s.Done)
	}
}
