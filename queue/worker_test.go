package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

type task struct {
	N    int    `json:"n"`
	Name string `json:"name,omitempty"`
}

// newTyped returns a Queue[task] named "q" on f's client.
func newTyped(t *testing.T, f *fixture, cfg queue.QueueConfig) *queue.Queue[task] {
	t.Helper()
	q, err := queue.NewQueue[task](f.client, f.ns, "q", cfg)
	if err != nil {
		t.Fatalf("NewQueue: %v", err)
	}
	return q
}

// runConsumer runs q.Consume in the background; the returned stop cancels it and waits for it to
// return, failing the test on an error.
func runConsumer(t *testing.T, q *queue.Queue[task], handle func(context.Context, *task) error, cfg queue.ConsumeConfig) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Consume(ctx, handle, cfg) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Consume: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Consume did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// logInto is a logger that writes into b, which the test may read.
func logInto(b *testio.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

func produceN(t *testing.T, q *queue.Queue[task], n int, opts ...queue.ProduceOption) []string {
	t.Helper()
	ps := make([]*task, n)
	for i := range ps {
		ps[i] = &task{N: i}
	}
	ids, err := q.ProduceMany(ctxT(t), ps, 0, opts...)
	if err != nil {
		t.Fatalf("ProduceMany: %v", err)
	}
	return ids
}

func TestWorkerProcessesAndAcks(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{})
		produceN(t, q, 50)
		var sum atomic.Int64
		var seen sync.Map
		stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
			d, ok := queue.DeliveryFromContext(ctx)
			if !ok || d.ID == "" || d.Delivery != 1 {
				return fmt.Errorf("delivery from context = %+v, %v", d, ok)
			}
			if _, dup := seen.LoadOrStore(d.ID, true); dup {
				t.Errorf("job %s handled twice", d.ID)
			}
			sum.Add(int64(v.N))
			return nil
		}, queue.ConsumeConfig{Concurrency: 4})
		testwait.Until(t, time.Minute, "all jobs acked", func() bool { return f.stats(t, "q").Acked == 50 })
		stop()
		if got := sum.Load(); got != 49*50/2 {
			t.Fatalf("sum of payloads = %d", got)
		}
		s := f.stats(t, "q")
		if s.Ready != 0 || s.Leased != 0 || s.Nacked != 0 {
			t.Fatalf("stats = %+v", s)
		}
		ws := q.WorkerStats()
		if ws.Succeeded != 50 || ws.Processed != 50 || ws.Failed != 0 || ws.Running != 0 || ws.Latency.Count != 50 {
			t.Fatalf("worker stats = %+v", ws)
		}
	})
}

func TestWorkerConcurrencyLimit(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{})
		const n, limit = 60, 5
		produceN(t, q, n)
		var running, peak, done atomic.Int64
		release := make(chan struct{})
		stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
			r := running.Add(1)
			for {
				p := peak.Load()
				if r <= p || peak.CompareAndSwap(p, r) {
					break
				}
			}
			if v.N < limit {
				<-release // the first jobs hold their slots until the pool is seen full
			}
			running.Add(-1)
			done.Add(1)
			return nil
		}, queue.ConsumeConfig{Concurrency: limit, Prefetch: 3})
		testwait.Until(t, time.Minute, "the pool to fill", func() bool { return running.Load() == limit })
		close(release)
		testwait.Until(t, time.Minute, "all jobs handled", func() bool { return done.Load() == n })
		stop()
		if p := peak.Load(); p > limit {
			t.Fatalf("%d handlers ran at once, limit %d", p, limit)
		}
	})
}

func TestWorkerRetriesWithBackoffThenDeadLetters(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		log := &testio.Buffer{}
		q := newTyped(t, f, queue.QueueConfig{Tries: 3, Logger: logInto(log)})
		id, err := q.Produce(ctxT(t), &task{N: 1}, 0)
		if err != nil {
			t.Fatalf("Produce: %v", err)
		}
		const backoff = 30 * time.Millisecond
		var mu sync.Mutex
		var attempts []int
		var at []time.Time
		var asked []int
		policy := queue.RetryPolicyFunc(func(attempt int, err error) time.Duration {
			mu.Lock()
			asked = append(asked, attempt)
			mu.Unlock()
			return backoff
		})
		stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
			d, _ := queue.DeliveryFromContext(ctx)
			mu.Lock()
			attempts = append(attempts, d.Delivery)
			at = append(at, time.Now())
			mu.Unlock()
			return errors.New("boom")
		}, queue.ConsumeConfig{RetryPolicy: policy})
		testwait.Until(t, time.Minute, "the job in the dead letter", func() bool { return f.stats(t, "q").Dead == 1 })
		stop()
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(attempts, []int{1, 2, 3}) {
			t.Fatalf("deliveries = %v, want 1 2 3", attempts)
		}
		if !slices.Equal(asked, []int{1, 2}) {
			t.Fatalf("retry policy asked for attempts %v, want 1 2 (none after the last try)", asked)
		}
		// The engine times the retry on Redis's clock in whole milliseconds (due = TIME truncated to
		// ms + backoff), so by this process's finer clock a retry may come up to 1ms sooner.
		const clockResolution = time.Millisecond
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < backoff-clockResolution {
				t.Fatalf("try %d came %s after the previous one, before the %s backoff", i+1, gap, backoff)
			}
		}
		page, err := q.DeadList(ctxT(t), 0, "")
		if err != nil || len(page.Jobs) != 1 {
			t.Fatalf("DeadList = %+v, %v", page, err)
		}
		dj := page.Jobs[0]
		if dj.ID != id || dj.Value == nil || dj.Value.N != 1 || dj.LastError != "boom" || dj.Deliveries != 3 {
			t.Fatalf("dead job = %+v", dj)
		}
		ws := q.WorkerStats()
		if ws.Failed != 3 || ws.Retried != 2 || ws.DeadLettered != 1 || ws.Succeeded != 0 {
			t.Fatalf("worker stats = %+v", ws)
		}
		if !strings.Contains(log.String(), "moved to the dead letter") {
			t.Fatalf("log lacks the dead-letter line:\n%s", log.String())
		}
	})
}

func TestWorkerSkipRetryAndRetryAfter(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{Tries: 5, Logger: logInto(&testio.Buffer{})})
	skipID, _ := q.Produce(ctxT(t), &task{N: 1}, 0)
	laterID, _ := q.Produce(ctxT(t), &task{N: 2}, 0)
	var handled atomic.Int64
	stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
		handled.Add(1)
		if v.N == 1 {
			return fmt.Errorf("wrapped: %w", queue.SkipRetry(errors.New("bad input")))
		}
		return queue.RetryAfter(time.Hour, errors.New("come back later"))
	}, queue.ConsumeConfig{})
	testwait.Until(t, time.Minute, "both jobs handled once", func() bool {
		s := f.stats(t, "q")
		return s.Dead == 1 && s.Delayed == 1
	})
	stop()
	dead, err := f.client.Get(ctxT(t), f.ns, "q", skipID)
	if err != nil || dead.State != queue.StateDead || dead.RemainingTries != 4 || !strings.Contains(dead.LastError, "bad input") {
		t.Fatalf("skipped job = %+v, %v", dead, err)
	}
	later, err := f.client.Get(ctxT(t), f.ns, "q", laterID)
	if err != nil || later.State != queue.StateDelayed || time.Until(later.DueAt) < 50*time.Minute {
		t.Fatalf("retry-after job = %+v, %v (due in %s)", later, err, time.Until(later.DueAt))
	}
	if handled.Load() != 2 {
		t.Fatalf("handled %d times, want 2", handled.Load())
	}
}

func TestWorkerUndecodablePayloadGoesDead(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{Logger: logInto(&testio.Buffer{})})
	id := f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte("{not json")})
	var called atomic.Bool
	stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
		called.Store(true)
		return nil
	}, queue.ConsumeConfig{})
	testwait.Until(t, time.Minute, "the job in the dead letter", func() bool { return f.stats(t, "q").Dead == 1 })
	stop()
	if called.Load() {
		t.Fatal("the handler ran on an undecodable payload")
	}
	page, err := q.DeadList(ctxT(t), 10, "")
	if err != nil || len(page.Jobs) != 1 {
		t.Fatalf("DeadList = %+v, %v", page, err)
	}
	if j := page.Jobs[0]; j.ID != id || j.Value != nil || j.DecodeErr == nil || !strings.Contains(j.LastError, "decode payload") {
		t.Fatalf("dead job = %+v", j)
	}
}

func TestWorkerPanicIsAFailureLoggedWithStack(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	log := &testio.Buffer{}
	q := newTyped(t, f, queue.QueueConfig{Logger: logInto(log)})
	if _, err := q.Produce(ctxT(t), &task{N: 7}, 0); err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int64
	stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
		if tries.Add(1) == 1 {
			panic("kaboom")
		}
		return nil
	}, queue.ConsumeConfig{RetryPolicy: queue.ExponentialBackoff{Base: time.Millisecond}})
	testwait.Until(t, time.Minute, "the retry to succeed", func() bool { return f.stats(t, "q").Acked == 1 })
	stop()
	ws := q.WorkerStats()
	if ws.Panics != 1 || ws.Failed != 1 || ws.Retried != 1 || ws.Succeeded != 1 {
		t.Fatalf("worker stats = %+v", ws)
	}
	out := log.String()
	if !strings.Contains(out, "handler panicked") || !strings.Contains(out, "kaboom") || !strings.Contains(out, "worker_test.go") {
		t.Fatalf("panic log lacks the value or the stack:\n%s", out)
	}
}

func TestWorkerTimeoutFailsTheRun(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{Tries: 1, Logger: logInto(&testio.Buffer{})})
	id, _ := q.Produce(ctxT(t), &task{}, 0)
	stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
		<-ctx.Done()
		return ctx.Err()
	}, queue.ConsumeConfig{Timeout: 20 * time.Millisecond})
	testwait.Until(t, time.Minute, "the job in the dead letter", func() bool { return f.stats(t, "q").Dead == 1 })
	stop()
	j, err := f.client.Get(ctxT(t), f.ns, "q", id)
	if err != nil || !strings.Contains(j.LastError, "deadline exceeded") {
		t.Fatalf("job = %+v, %v", j, err)
	}
}

func TestWorkerExtendsTheLeaseWhileTheHandlerRuns(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{TTR: 600 * time.Millisecond})
		id, _ := q.Produce(ctxT(t), &task{}, 0)
		var runs atomic.Int64
		stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
			runs.Add(1)
			first, err := f.client.Get(ctx, f.ns, "q", id)
			if err != nil {
				return err
			}
			// Hold the job until its lease was extended past twice its first end.
			testwait.Until(t, time.Minute, "the lease to be extended", func() bool {
				j, err := f.client.Get(ctx, f.ns, "q", id)
				return err == nil && j.LeaseUntil.Sub(first.LeaseUntil) > 700*time.Millisecond
			})
			return nil
		}, queue.ConsumeConfig{})
		testwait.Until(t, time.Minute, "the job acked", func() bool { return f.stats(t, "q").Acked == 1 })
		stop()
		if runs.Load() != 1 || q.WorkerStats().LeasesLost != 0 {
			t.Fatalf("runs = %d, stats = %+v", runs.Load(), q.WorkerStats())
		}
	})
}

func TestWorkerPriorityOrder(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{})
		for i, p := range []int{0, 5, 1, 9, 5, 0} {
			if _, err := q.Produce(ctxT(t), &task{N: i}, 0, queue.WithPriority(p)); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		var order []int
		stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
			mu.Lock()
			order = append(order, v.N)
			mu.Unlock()
			return nil
		}, queue.ConsumeConfig{Concurrency: 1})
		testwait.Until(t, time.Minute, "all jobs handled", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(order) == 6
		})
		stop()
		// Priority 9, then the two 5s in publish order, then 1, then the two 0s in publish order.
		if want := []int{3, 1, 4, 2, 0, 5}; !slices.Equal(order, want) {
			t.Fatalf("order = %v, want %v", order, want)
		}
	})
}

func TestWorkerGracefulShutdownLosesNothing(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{})
		const n = 40
		produceN(t, q, n)
		var handled sync.Map
		var count atomic.Int64
		gate := make(chan struct{})
		handle := func(ctx context.Context, v *task) error {
			if _, dup := handled.LoadOrStore(v.N, true); dup {
				t.Errorf("job %d handled twice", v.N)
			}
			count.Add(1)
			<-gate
			return nil
		}
		// 4 running and 4 prefetched when the shutdown starts; the running ones finish during the drain.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- q.Consume(ctx, handle, queue.ConsumeConfig{Concurrency: 4, Prefetch: 4}) }()
		testwait.Until(t, time.Minute, "4 running and 4 prefetched", func() bool {
			return count.Load() == 4 && f.stats(t, "q").Leased == 8
		})
		cancel()
		// The prefetched jobs come back at once, while the running ones drain.
		testwait.Until(t, time.Minute, "the prefetched jobs released", func() bool { return f.stats(t, "q").Released == 4 })
		close(gate)
		if err := <-done; err != nil {
			t.Fatalf("Consume: %v", err)
		}
		s := f.stats(t, "q")
		if s.Acked != 4 || s.Leased != 0 || s.Ready != n-4 || s.Retried != 0 || s.Nacked != 0 {
			t.Fatalf("after shutdown: stats = %+v", s)
		}
		// A second worker gets every other job, each on its first try.
		stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
			if d, _ := queue.DeliveryFromContext(ctx); d.RemainingTries != 2 {
				t.Errorf("job %d has %d tries left after a release, want 2", v.N, d.RemainingTries)
			}
			return handle(ctx, v)
		}, queue.ConsumeConfig{Concurrency: 4})
		testwait.Until(t, time.Minute, "every job handled", func() bool { return f.stats(t, "q").Acked == n })
		stop()
		if count.Load() != n {
			t.Fatalf("handled %d jobs, want %d", count.Load(), n)
		}
	})
}

func TestWorkerDrainTimeoutHandsBackRunningJobs(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{Logger: logInto(&testio.Buffer{})})
	id, _ := q.Produce(ctxT(t), &task{}, 0)
	started := make(chan struct{})
	var cause atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(hctx context.Context, v *task) error {
			close(started)
			<-hctx.Done() // stays until the drain timeout cancels it
			cause.Store(hctx.Err())
			return hctx.Err()
		}, queue.ConsumeConfig{DrainTimeout: 50 * time.Millisecond})
	}()
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if c, _ := cause.Load().(error); !errors.Is(c, context.Canceled) {
		t.Fatalf("handler context ended with %v", c)
	}
	j, err := f.client.Get(ctxT(t), f.ns, "q", id)
	if err != nil || j.State != queue.StateReady || j.RemainingTries != 3 || j.Position != 0 {
		t.Fatalf("job after the drain timeout = %+v, %v", j, err)
	}
	if ws := q.WorkerStats(); ws.Released != 1 || ws.Failed != 0 {
		t.Fatalf("worker stats = %+v", ws)
	}
}

func TestWorkerProducersAndConsumersHandleEveryJobOnce(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		const producers, consumers, perProducer = 4, 3, 150
		var handled sync.Map
		var count, dups atomic.Int64
		for c := range consumers {
			// Each consumer has a client and a Queue value of its own, as separate processes would.
			cf := setup(t, env, queue.Config{})
			cq := newTyped(t, cf, queue.QueueConfig{})
			runConsumer(t, cq, func(ctx context.Context, v *task) error {
				if _, dup := handled.LoadOrStore(v.Name, c); dup {
					dups.Add(1)
				}
				count.Add(1)
				return nil
			}, queue.ConsumeConfig{Concurrency: 8, Prefetch: 8})
		}
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				pq := newTyped(t, setup(t, env, queue.Config{}), queue.QueueConfig{})
				for i := range perProducer {
					v := &task{N: i, Name: fmt.Sprintf("p%d-%d", p, i)}
					var err error
					if i%3 == 0 {
						_, err = pq.ProduceMany(ctxT(t), []*task{v}, 0)
					} else {
						_, err = pq.Produce(ctxT(t), v, 0)
					}
					if err != nil {
						t.Errorf("Produce: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		const total = producers * perProducer
		testwait.Until(t, time.Minute, "every job handled", func() bool { return count.Load() >= total })
		s := f.stats(t, "q")
		if count.Load() != total || dups.Load() != 0 || s.Published != total {
			t.Fatalf("handled %d (%d twice) of %d published; stats %+v", count.Load(), dups.Load(), total, s)
		}
		testwait.Until(t, time.Minute, "every ack flushed", func() bool { return f.stats(t, "q").Acked == total })
	})
}

func TestWorkerMiddlewareOrderAndLogMiddleware(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	log := &testio.Buffer{}
	q := newTyped(t, f, queue.QueueConfig{Logger: logInto(&testio.Buffer{})})
	if _, err := q.Produce(ctxT(t), &task{N: 1}, 0, queue.WithAttributes(map[string]string{"trace": "abc"})); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []string
	mark := func(name string) queue.Middleware {
		return func(next queue.Handler) queue.Handler {
			return func(ctx context.Context, d *queue.Delivery) error {
				mu.Lock()
				calls = append(calls, name+">"+d.Attributes["trace"])
				mu.Unlock()
				err := next(ctx, d)
				mu.Lock()
				calls = append(calls, "<"+name)
				mu.Unlock()
				return err
			}
		}
	}
	stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
		mu.Lock()
		calls = append(calls, "handler")
		mu.Unlock()
		return nil
	}, queue.ConsumeConfig{Middleware: []queue.Middleware{
		mark("outer"), mark("inner"), queue.LogMiddleware(logInto(log), slog.LevelInfo),
	}})
	testwait.Until(t, time.Minute, "the job acked", func() bool { return f.stats(t, "q").Acked == 1 })
	stop()
	want := []string{"outer>abc", "inner>abc", "handler", "<inner", "<outer"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(calls, want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
	if out := log.String(); !strings.Contains(out, "queue job done") || !strings.Contains(out, "job_id=") {
		t.Fatalf("log middleware wrote:\n%s", out)
	}
}

func TestWorkerConfigValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{})
	nop := func(context.Context, *task) error { return nil }
	for _, cfg := range []queue.ConsumeConfig{
		{Concurrency: -1}, {Prefetch: -1}, {TTR: time.Microsecond}, {Timeout: -1}, {AckBatch: -5},
		{Middleware: []queue.Middleware{nil}},
	} {
		if err := q.Consume(ctxT(t), nop, cfg); err == nil {
			t.Errorf("Consume(%+v) accepted a bad config", cfg)
		}
	}
	if err := q.Consume(ctxT(t), nil, queue.ConsumeConfig{}); err == nil {
		t.Error("Consume accepted a nil handler")
	}
}

func TestWorkerReturnsErrClosedWhenTheClientCloses(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.NewQueue[task](c, "ns", "q", queue.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(context.Background(), func(context.Context, *task) error { return nil }, queue.ConsumeConfig{})
	}()
	testwait.Until(t, time.Minute, "the worker waiting for jobs", func() bool {
		chans, _ := env.Client.PubSubChannels(context.Background(), env.Prefix+"*").Result()
		return len(chans) > 0
	})
	_ = c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, queue.ErrClosed) {
			t.Fatalf("Consume = %v, want ErrClosed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Consume did not return after Close")
	}
}

// roundTrips counts the commands and pipelines a Redis client sends.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

func TestWorkerBatchesFetchesAndAcks(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := setup(t, env, queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{})
	const n = 1000
	produceN(t, q, n)
	rt := &roundTrips{}
	env.Client.AddHook(rt)
	var count atomic.Int64
	all := make(chan struct{})
	stop := runConsumer(t, q, func(context.Context, *task) error {
		if count.Add(1) == n {
			close(all)
		}
		return nil
	}, queue.ConsumeConfig{Concurrency: 20, Prefetch: 20})
	select {
	case <-all:
	case <-time.After(20 * time.Second):
		t.Fatalf("handled %d of %d jobs", count.Load(), n)
	}
	stop()
	trips := rt.n.Load()
	t.Logf("%d jobs fetched, run and acked in %d round trips (%.3f per job)", n, trips, float64(trips)/n)
	if s := f.stats(t, "q"); s.Acked != n {
		t.Fatalf("acked %d of %d", s.Acked, n)
	}
	if trips >= n/2 {
		t.Fatalf("%d round trips for %d jobs: fetches and acks are not batched", trips, n)
	}
}

func TestWorkerCancelsAHandlerWhoseLeaseIsLost(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{TTR: 100 * time.Millisecond, Logger: logInto(&testio.Buffer{})})
		id, _ := q.Produce(ctxT(t), &task{}, 0)
		started := make(chan struct{})
		cause := make(chan error, 1)
		stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		}, queue.ConsumeConfig{})
		<-started
		if n, err := f.client.Delete(ctxT(t), f.ns, "q", id); err != nil || n != 1 {
			t.Fatalf("Delete = %d, %v", n, err)
		}
		select {
		case err := <-cause:
			if !errors.Is(err, queue.ErrLeaseLost) {
				t.Fatalf("handler context cancelled with %v, want ErrLeaseLost", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the handler of a deleted job was not cancelled")
		}
		stop()
		if ws := q.WorkerStats(); ws.LeasesLost != 1 || ws.Failed != 0 || ws.Succeeded != 0 {
			t.Fatalf("worker stats = %+v", ws)
		}
	})
}
