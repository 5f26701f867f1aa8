package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

func TestMaintainerMovesUnreadQueues(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		// Two maintainers at once (two processes) must not trip over each other.
		for range 2 {
			m := queue.NewMaintainer(f.client, queue.MaintainerConfig{Interval: 10 * time.Millisecond})
			if err := m.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Stop)
		}
		due := f.publish(t, queue.PublishParams{Queue: "delayed", Delay: 50 * time.Millisecond})
		f.publish(t, queue.PublishParams{Queue: "leased", TTR: 50 * time.Millisecond, Tries: 2})
		leased := f.consumeOne(t, "leased")
		testwait.Until(t, time.Minute, "the maintainer to promote and reap", func() bool {
			a, b := f.stats(t, "delayed"), f.stats(t, "leased")
			return a.Ready == 1 && b.Ready == 1 && b.Retried == 1
		})
		if j, err := f.client.Get(ctxT(t), f.ns, "delayed", due); err != nil || j.State != queue.StateReady {
			t.Fatalf("promoted job = %+v, %v", j, err)
		}
		if j, _ := f.client.Get(ctxT(t), f.ns, "leased", leased.ID); j.State != queue.StateReady || j.RemainingTries != 1 {
			t.Fatalf("reaped job = %+v", j)
		}
	})
}

func TestMaintainerStartTwiceAndStop(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		m := queue.NewMaintainer(f.client, queue.MaintainerConfig{})
		if err := m.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := m.Start(context.Background()); !errors.Is(err, startstop.ErrAlreadyStarted) {
			t.Fatalf("a second Start = %v, want ErrAlreadyStarted", err)
		}
		m.Stop()
		m.Stop() // idempotent
	})
}

func TestMaintainOnceCountsWork(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		f.publish(t, queue.PublishParams{Queue: "q", Delay: 20 * time.Millisecond})
		var res queue.MaintainResult
		testwait.Until(t, 30*time.Second, "a pass to promote the job", func() bool {
			var err error
			if res, err = f.client.MaintainOnce(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			return res.Promoted == 1
		})
		if res.Queues+res.Swept < 1 { // the due index, or the sweep of the registry, had it
			t.Fatalf("MaintainOnce = %+v", res)
		}
	})
}
