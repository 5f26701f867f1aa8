package queue_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// idleQueues publishes one ready job (no ttl: nothing ever falls due) to each of n queues spread
// over namespaces "idle00".."idle19", in pipelined batches from a few goroutines.
func idleQueues(t *testing.T, f *fixture, n int) {
	t.Helper()
	const batch = 500
	var wg sync.WaitGroup
	errs := make(chan error, n/batch+1)
	sem := make(chan struct{}, 8)
	for start := 0; start < n; start += batch {
		ps := make([]queue.PublishParams, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			ps = append(ps, queue.PublishParams{Namespace: fmt.Sprintf("idle%02d", i%20), Queue: fmt.Sprintf("q%d", i)})
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := f.client.PublishMany(ctxT(t), ps); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("PublishMany: %v", err)
	}
}

// With 5,000 idle queues registered, a pass visits none of them for what is due (the sweep of
// the registry, a few hundred queues a pass, aside); a delayed job and an expired lease in a
// namespace that sorts after all of them are handled, each pass visiting only the queues that
// have something due.
func TestMaintainVisitsOnlyDueQueues(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		const idle = 5000
		idleQueues(t, f, idle)
		res, err := f.client.MaintainOnce(ctxT(t))
		if err != nil || res.Queues != 0 {
			t.Fatalf("a pass over idle queues = %+v, %v; want no queue visited", res, err)
		}

		late := f.publish(t, queue.PublishParams{Namespace: "zz", Queue: "late", Delay: 50 * time.Millisecond})
		f.publish(t, queue.PublishParams{Namespace: "zz", Queue: "leased", TTR: 50 * time.Millisecond, Tries: 2})
		ds := f.consume(t, queue.ConsumeParams{Namespace: "zz", Queues: []string{"leased"}})
		if len(ds) != 1 {
			t.Fatalf("consumed %d jobs, want 1", len(ds))
		}
		var promoted, reaped int
		testwait.Until(t, time.Minute, "the delayed job promoted and the lease reaped", func() bool {
			res, err := f.client.MaintainOnce(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Queues > 2 {
				t.Fatalf("a pass visited %d queues, want at most the 2 with work due", res.Queues)
			}
			promoted += res.Promoted
			reaped += res.Reaped
			return promoted == 1 && reaped == 1
		})
		if j, err := f.client.Get(ctxT(t), "zz", "late", late); err != nil || j.State != queue.StateReady {
			t.Fatalf("delayed job = %+v, %v; want ready", j, err)
		}
		if j, err := f.client.Get(ctxT(t), "zz", "leased", ds[0].ID); err != nil || j.State != queue.StateReady || j.RemainingTries != 1 {
			t.Fatalf("reaped job = %+v, %v; want ready with one try left", j, err)
		}
	})
}

// A queue whose housekeeping fails (a key of the wrong type under its name) is reported, by name,
// and the queues of every namespace, before and after it, are maintained all the same; the
// Maintainer logs it with its backoff.
func TestMaintainIsolatesAFailingQueue(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		// The broken queue's job is due first, so it heads the index.
		f.publish(t, queue.PublishParams{Namespace: "mm", Queue: "bad", Delay: time.Millisecond})
		healthy := [][2]string{{"aa", "q"}, {"mm", "q"}, {"zz", "q"}}
		for _, q := range healthy {
			f.publish(t, queue.PublishParams{Namespace: q[0], Queue: q[1], Delay: 5 * time.Millisecond})
		}
		expiry := env.Prefix + ":{mm:bad}:expiry"
		if err := env.Client.Set(ctx, expiry, "not a zset", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var failures []error
		testwait.Until(t, time.Minute, "the healthy queues maintained", func() bool {
			if _, err := f.client.MaintainOnce(ctx); err != nil {
				failures = append(failures, err)
			}
			for _, q := range healthy {
				if s, err := f.client.Stats(ctx, q[0], q[1]); err != nil || s.Ready != 1 {
					return false
				}
			}
			return true
		})
		if len(failures) == 0 || !strings.Contains(failures[0].Error(), "mm/bad") {
			t.Fatalf("pass errors = %v, want the failure of mm/bad", failures)
		}
		if s, err := f.client.Stats(ctx, "mm", "bad"); err != nil || s.Delayed != 1 {
			t.Fatalf("broken queue = %+v, %v; want its job still delayed", s, err)
		}

		var log testio.Buffer
		m := queue.NewMaintainer(f.client, queue.MaintainerConfig{Interval: 20 * time.Millisecond, Logger: logInto(&log)})
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Stop)
		testwait.Until(t, time.Minute, "the failure logged", func() bool {
			return strings.Contains(log.String(), "queue maintenance failed")
		})
		line := log.String()
		for _, want := range []string{"namespace=mm", "queue=bad", "retry_in=", "WRONGTYPE"} {
			if !strings.Contains(line, want) {
				t.Fatalf("log %q lacks %q", line, want)
			}
		}
	})
}

// Jobs stored before the due index existed (here: the index removed) are still handled: the
// sweep of the registry indexes their queues.
func TestMaintainIndexesQueuesStoredWithoutTheIndex(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		late := f.publish(t, queue.PublishParams{Namespace: "old", Queue: "delayed", Delay: 20 * time.Millisecond})
		f.publish(t, queue.PublishParams{Namespace: "old", Queue: "leased", TTR: 20 * time.Millisecond, Tries: 2})
		f.consume(t, queue.ConsumeParams{Namespace: "old", Queues: []string{"leased"}})
		if err := redistest.DeletePrefix(ctx, env.Client, env.Prefix+":due"); err != nil {
			t.Fatal(err)
		}
		swept := 0
		testwait.Until(t, time.Minute, "the stranded jobs handled", func() bool {
			res, err := f.client.MaintainOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			swept += res.Swept
			d, _ := f.client.Stats(ctx, "old", "delayed")
			l, _ := f.client.Stats(ctx, "old", "leased")
			return d.Ready == 1 && l.Retried == 1
		})
		if swept < 2 {
			t.Fatalf("the sweep indexed %d queues, want both", swept)
		}
		if j, err := f.client.Get(ctx, "old", "delayed", late); err != nil || j.State != queue.StateReady {
			t.Fatalf("delayed job = %+v, %v; want ready", j, err)
		}
	})
}
