package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

func TestStrictPriorityFIFOWithin(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		var want []string
		prios := []int{0, 5, 255, 5, 0, 255, 1}
		ids := map[int][]string{}
		for i, p := range prios {
			id := f.publish(t, queue.PublishParams{Queue: "q", Priority: p, Payload: []byte(fmt.Sprint(i))})
			ids[p] = append(ids[p], id)
		}
		for _, p := range []int{255, 5, 1, 0} {
			want = append(want, ids[p]...)
		}
		// Mixed batch sizes must not change the order.
		var got []string
		for _, n := range []int{2, 1, 3, 5} {
			for _, d := range f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: n}) {
				got = append(got, d.ID)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("consume order\n got %v\nwant %v", got, want)
		}
	})
}

func TestConsumeEarlierQueueFirst(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		low := f.publish(t, queue.PublishParams{Queue: "low", Priority: 255})
		high1 := f.publish(t, queue.PublishParams{Queue: "high"})
		high2 := f.publish(t, queue.PublishParams{Queue: "high"})
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"high", "low"}, Count: 3})
		if len(ds) != 3 || ds[0].ID != high1 || ds[1].ID != high2 || ds[2].ID != low || ds[2].Queue != "low" {
			t.Fatalf("multi-queue consume = %v", deliveryIDs(ds))
		}
	})
}

func TestConsumeEmptyAnswersAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	if ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}}); len(ds) != 0 {
		t.Fatalf("empty queue gave %d jobs", len(ds))
	}
}

func TestBlockingConsumeWokenByPublish(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{WakeupInterval: time.Minute}) // no safety re-check: only the notification can wake it
		got := make(chan []queue.Delivery, 1)
		go func() {
			ds, _ := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: []string{"other", "q"}, Timeout: 30 * time.Second})
			got <- ds
		}()
		// The publish may land before or after the consumer subscribed: either its own check or the
		// notification must get it the job.
		id := f.publish(t, queue.PublishParams{Queue: "q"})
		select {
		case ds := <-got:
			if len(ds) != 1 || ds[0].ID != id {
				t.Fatalf("blocked consume got %v, want %s", deliveryIDs(ds), id)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("blocked consumer was not woken by a publish")
		}
	})
}

func TestBlockingConsumeTimesOutEmpty(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		start := time.Now()
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Timeout: 100 * time.Millisecond})
		if len(ds) != 0 {
			t.Fatalf("got %d jobs from an empty queue", len(ds))
		}
		if time.Since(start) < 100*time.Millisecond {
			t.Fatalf("returned after %s, before its timeout", time.Since(start))
		}
	})
}

func TestBlockingConsumeEndsWithContext(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := f.client.Consume(ctx, queue.ConsumeParams{Namespace: f.ns, Queues: []string{"q"}, Timeout: time.Minute})
			done <- err
		}()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Consume error = %v, want context.Canceled", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Consume did not return when its context ended")
		}
	})
}

func TestCloseReleasesBlockedConsumers(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := c.Consume(context.Background(), queue.ConsumeParams{Namespace: "ns", Queues: []string{"q"}, Timeout: time.Minute})
			done <- err
		}()
		// Let the consumer subscribe, then close: it must return either way.
		testwait.Until(t, time.Minute, "consumer to block", func() bool {
			return subscribers(t, env, env.Prefix+":{ns:q}:notify") > 0
		})
		_ = c.Close()
		select {
		case err := <-done:
			if !errors.Is(err, queue.ErrClosed) {
				t.Fatalf("Consume error = %v, want ErrClosed", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Close did not release a blocked consumer")
		}
	})
}

// TestBlockingConsumeAcrossNodes blocks one consumer on three queues whose keys live on three
// different masters of the cluster, and wakes it by publishing to each in turn: the notification
// of every node must reach it (on a standalone server the three are just three queues).
func TestBlockingConsumeAcrossNodes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{WakeupInterval: time.Minute}) // only a notification can wake it
		queues := queuesOnDistinctMasters(t, env, f.ns, 3)
		for _, q := range queues {
			got := make(chan []queue.Delivery, 1)
			go func() {
				ds, _ := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: queues, Timeout: 30 * time.Second})
				got <- ds
			}()
			testwait.Until(t, time.Minute, "consumer to subscribe on every queue", func() bool {
				for _, q := range queues {
					if subscribers(t, env, env.Prefix+":{"+f.ns+":"+q+"}:notify") == 0 {
						return false
					}
				}
				return true
			})
			id := f.publish(t, queue.PublishParams{Queue: q})
			select {
			case ds := <-got:
				if len(ds) != 1 || ds[0].ID != id {
					t.Fatalf("blocked consume got %v, want %s of %s", deliveryIDs(ds), id, q)
				}
				f.ack(t, ds[0])
			case <-time.After(20 * time.Second):
				t.Fatalf("a consumer blocked on %v was not woken by a publish to %s", queues, q)
			}
		}
	})
}

// queuesOnDistinctMasters returns n queue names of ns whose keys live on n different masters of a
// cluster (any n names on a standalone server).
func queuesOnDistinctMasters(t *testing.T, env *redistest.Env, ns string, n int) []string {
	t.Helper()
	cc, ok := env.Client.(*redis.ClusterClient)
	var out []string
	seen := map[string]bool{}
	for i := 0; len(out) < n && i < 1000; i++ {
		q := "q" + strconv.Itoa(i)
		if !ok {
			out = append(out, q)
			continue
		}
		node, err := cc.MasterForKey(ctxT(t), env.Prefix+":{"+ns+":"+q+"}:notify")
		if err != nil {
			t.Fatalf("master for %s: %v", q, err)
		}
		if addr := node.Options().Addr; !seen[addr] {
			seen[addr] = true
			out = append(out, q)
		}
	}
	if len(out) < n {
		t.Fatalf("found queues on %d masters, want %d", len(out), n)
	}
	return out
}

// subscribers counts the subscribers of a channel on every master (Pub/Sub counts are per node).
func subscribers(t *testing.T, env *redistest.Env, channel string) int64 {
	t.Helper()
	cc, ok := env.Client.(*redis.ClusterClient)
	if !ok {
		return env.Client.PubSubNumSub(ctxT(t), channel).Val()[channel]
	}
	var total atomic.Int64
	_ = cc.ForEachShard(ctxT(t), func(ctx context.Context, c *redis.Client) error {
		total.Add(c.PubSubNumSub(ctx, channel).Val()[channel])
		return nil
	})
	return total.Load()
}

func TestDelayedJobNeverEarlyAndOnTime(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{WakeupInterval: time.Minute})
		const delay = 300 * time.Millisecond
		id := f.publish(t, queue.PublishParams{Queue: "q", Delay: delay, TTR: 10 * time.Second})
		j, err := f.client.Get(ctxT(t), f.ns, "q", id)
		// Due delay after the publish, counted from its µs on Redis's clock, rounded up to a ms.
		if err != nil || j.State != queue.StateDelayed || j.DueAt.Sub(j.PublishedAt) < delay ||
			j.DueAt.Sub(j.PublishedAt) > delay+time.Millisecond {
			t.Fatalf("delayed job = %+v, %v", j, err)
		}
		if ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}}); len(ds) != 0 {
			t.Fatal("a delayed job was delivered at once")
		}
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Timeout: 20 * time.Second})
		if len(ds) != 1 || ds[0].ID != id {
			t.Fatalf("blocked consume got %v", deliveryIDs(ds))
		}
		// Redis's clock decides: the lease started (LeaseUntil - TTR) no earlier than the due time.
		leasedAt := ds[0].LeaseUntil.Add(-10 * time.Second)
		if leasedAt.Before(j.DueAt) {
			t.Fatalf("delivered at %s, %s before due", leasedAt, j.DueAt.Sub(leasedAt))
		}
	})
}

func TestRunAt(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		id := f.publish(t, queue.PublishParams{Queue: "q", RunAt: at})
		j, err := f.client.Get(ctxT(t), f.ns, "q", id)
		if err != nil || j.State != queue.StateDelayed || !j.DueAt.Equal(at) {
			t.Fatalf("job = %+v, %v; want delayed until %s", j, err, at)
		}
		past := f.publish(t, queue.PublishParams{Queue: "q", RunAt: time.Now().Add(-time.Hour)})
		if d := f.consumeOne(t, "q"); d.ID != past {
			t.Fatalf("a run_at in the past should be ready at once")
		}
	})
}

// TestExpiredJobMidQueueNeverHidesLiveOnes: jobs past their ttl are not handed out, whether the
// consume's housekeeping removes them (Batch 1000) or, past Batch, the consume finds them among
// the jobs it pops (Batch 2).
func TestExpiredJobMidQueueNeverHidesLiveOnes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		for _, batch := range []int{1000, 2} {
			t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) { expiredJobsAmongLiveOnes(t, env, batch) })
		}
	})
}

func expiredJobsAmongLiveOnes(t *testing.T, env *redistest.Env, batch int) {
	t.Helper()
	f := setup(t, env, queue.Config{Batch: batch})
	f.ns = fmt.Sprint("batch", batch)
	var expiring []string
	for range 5 {
		expiring = append(expiring, f.publish(t, queue.PublishParams{Queue: "q", TTL: 30 * time.Millisecond}))
	}
	live := f.publish(t, queue.PublishParams{Queue: "q"})
	// Wait until Redis considers the ttl passed: Get no longer finds the last of them, though
	// nothing has removed them yet.
	testwait.Until(t, time.Minute, "the ttl to pass", func() bool {
		_, err := f.client.Get(ctxT(t), f.ns, "q", expiring[len(expiring)-1])
		return errors.Is(err, queue.ErrNotFound)
	})
	ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 10})
	if len(ds) != 1 || ds[0].ID != live {
		t.Fatalf("consume gave %v, want only the live job %s", deliveryIDs(ds), live)
	}
	s := f.stats(t, "q")
	if s.Expired != 5 || s.Ready != 0 {
		t.Fatalf("stats = %+v, want 5 expired", s)
	}
	for _, id := range expiring {
		if _, err := f.client.Get(ctxT(t), f.ns, "q", id); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("expired job %s still there: %v", id, err)
		}
	}
}

func TestExpiredJobsLeaveEveryStructure(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		f.publish(t, queue.PublishParams{Queue: "q", TTL: 20 * time.Millisecond})
		f.publish(t, queue.PublishParams{Queue: "q", TTL: 200 * time.Millisecond, Delay: 100 * time.Millisecond})
		testwait.Until(t, time.Minute, "both jobs to expire", func() bool {
			if _, err := f.client.MaintainOnce(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			s := f.stats(t, "q")
			return s.Expired == 2
		})
		if s := f.stats(t, "q"); s.Ready != 0 || s.Delayed != 0 {
			t.Fatalf("expired jobs left behind: %+v", s)
		}
		// Redis drops empty containers: only counters, the queue registry, the mark of the
		// registry's sweep (it expires), the due index's slots in use (on a Cluster) and the
		// answers of the publishes, kept a short while for a client's repeat of them, may remain;
		// the queue's entry in the due index is gone.
		keys, err := f.env.Client.Keys(ctxT(t), f.env.Prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if strings.Contains(k, ":call:") {
				if ttl := f.env.Client.PTTL(ctxT(t), k).Val(); ttl <= 0 || ttl > time.Minute {
					t.Errorf("call key %s has TTL %v, want at most a minute", k, ttl)
				}
				continue
			}
			if !strings.HasSuffix(k, ":stats") && !strings.HasSuffix(k, ":namespaces") && !strings.HasSuffix(k, ":queues") &&
				!strings.HasSuffix(k, ":due:swept") && !strings.HasSuffix(k, ":due:slots") {
				t.Errorf("key %s is left behind by expired jobs", k)
			}
		}
	})
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{WakeupInterval: time.Minute})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "q"})
		if err := f.client.Pause(ctx, f.ns, "q"); err != nil {
			t.Fatal(err)
		}
		if ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}}); len(ds) != 0 {
			t.Fatal("a paused queue delivered a job")
		}
		if s := f.stats(t, "q"); !s.Paused || s.Ready != 1 {
			t.Fatalf("stats = %+v", s)
		}
		got := make(chan []queue.Delivery, 1)
		go func() {
			ds, _ := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: []string{"q"}, Timeout: 30 * time.Second})
			got <- ds
		}()
		testwait.Until(t, time.Minute, "consumer to block", func() bool {
			ch := env.Prefix + ":{ns:q}:notify"
			return env.Client.PubSubNumSub(ctxT(t), ch).Val()[ch] > 0
		})
		if err := f.client.Resume(ctx, f.ns, "q"); err != nil {
			t.Fatal(err)
		}
		select {
		case ds := <-got:
			if len(ds) != 1 || ds[0].ID != id {
				t.Fatalf("after resume got %v", deliveryIDs(ds))
			}
		case <-time.After(20 * time.Second):
			t.Fatal("resume did not wake the blocked consumer")
		}
	})
}

func TestManyConsumersNeverShareADelivery(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		const jobs, workers = 600, 8
		ps := make([]queue.PublishParams, jobs)
		for i := range ps {
			ps[i] = queue.PublishParams{Namespace: f.ns, Queue: "q", Priority: i % 4, Payload: []byte(fmt.Sprint(i))}
		}
		if _, err := f.client.PublishMany(ctxT(t), ps); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for {
					ds, err := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: []string{"q"}, Count: 1 + w%5})
					if err != nil {
						t.Error(err)
						return
					}
					if len(ds) == 0 {
						return
					}
					acks := make([]queue.AckParams, len(ds))
					for i, d := range ds {
						acks[i] = queue.AckParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery}
						mu.Lock()
						seen[d.ID]++
						mu.Unlock()
					}
					errs, err := f.client.AckMany(ctxT(t), acks)
					if err != nil {
						t.Error(err)
						return
					}
					for _, e := range errs {
						if e != nil {
							t.Errorf("ack: %v", e)
						}
					}
				}
			})
		}
		wg.Wait()
		if len(seen) != jobs {
			t.Fatalf("handled %d distinct jobs, want %d", len(seen), jobs)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("job %s delivered %d times", id, n)
			}
		}
		if s := f.stats(t, "q"); s.Acked != jobs || s.Ready != 0 || s.Leased != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestConsumeValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	for _, tt := range []struct {
		p     queue.ConsumeParams
		field string
	}{
		{queue.ConsumeParams{Namespace: "", Queues: []string{"q"}}, "namespace"},
		{queue.ConsumeParams{Namespace: "ns"}, "queues"},
		{queue.ConsumeParams{Namespace: "ns", Queues: []string{"q", "q"}}, "queues"},
		{queue.ConsumeParams{Namespace: "ns", Queues: []string{"bad name"}}, "queues"},
		{queue.ConsumeParams{Namespace: "ns", Queues: manyQueues(queue.MaxConsumeQueues + 1)}, "queues"},
		{queue.ConsumeParams{Namespace: "ns", Queues: []string{"q"}, Count: 1001}, "count"},
		{queue.ConsumeParams{Namespace: "ns", Queues: []string{"q"}, Count: -1}, "count"},
		{queue.ConsumeParams{Namespace: "ns", Queues: []string{"q"}, TTR: -1}, "ttr"},
		{queue.ConsumeParams{Namespace: "ns", Queues: []string{"q"}, Timeout: -1}, "timeout"},
	} {
		_, err := f.client.Consume(ctxT(t), tt.p)
		var v *sluice.FieldError
		if !errors.As(err, &v) || v.Field != tt.field {
			t.Errorf("Consume(%+v) = %v, want invalid %s", tt.p, err, tt.field)
		}
	}
}

func deliveryIDs(ds []queue.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// A consume of several queues that fails on a later queue after an earlier one leased jobs must
// hand those leases to the caller: returned next to an error they are dropped by callers, and the
// jobs sit leased by nobody until their lease ends, which costs them a try (or sends them dead).
func TestConsumeFailureOnLaterQueueKeepsEarlierLeases(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "a", Tries: 1})
		// Queue b's settings key holds a value of the wrong type, so its consume script fails.
		if err := env.Client.Set(ctx, env.Prefix+":{"+f.ns+":b}:meta", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		ds, err := f.client.Consume(ctx, queue.ConsumeParams{Namespace: f.ns, Queues: []string{"a", "b"}, Count: 2})
		if err != nil || len(ds) != 1 || ds[0].ID != id {
			t.Fatalf("Consume = %d jobs, %v; want job %s and no error", len(ds), err, id)
		}
		f.ack(t, ds[0])
		if _, err := f.client.Consume(ctx, queue.ConsumeParams{Namespace: f.ns, Queues: []string{"a", "b"}}); err == nil {
			t.Fatal("Consume of the broken queue alone succeeded")
		}
	})
}

// manyQueues is n distinct queue names.
func manyQueues(n int) []string {
	qs := make([]string, n)
	for i := range qs {
		qs[i] = fmt.Sprintf("q%d", i)
	}
	return qs
}
