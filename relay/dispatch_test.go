package relay_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// Two dispatchers in two Clients (as two processes would be) share the endpoint's limits: the
// target never sees more calls at once than Concurrency, and calls are spaced by the rate limit.
func TestLimitsHoldAcrossTwoDispatchers(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		release := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
			if n <= 3 {
				<-release // the first calls hold their slots until the test has looked
			}
			_, _ = w.Write([]byte("ok"))
		})
		a := newClient(t, env, relay.Config{})
		b := newClient(t, env, relay.Config{})
		setEndpoint(t, a, relay.Endpoint{Name: "slow", TargetURL: tg.URL, Concurrency: 3, QPS: 50})
		startDispatcher(t, a, relay.DispatcherConfig{Workers: 8})
		startDispatcher(t, b, relay.DispatcherConfig{Workers: 8})

		const n = 40
		ids := make([]string, n)
		for i := range ids {
			ids[i] = submit(t, a, relay.SubmitParams{Endpoint: "slow"}).ID
		}
		testwait.Until(t, time.Minute, "3 calls in flight", func() bool { return tg.inFlight.Load() == 3 })
		// The slots are full: no fourth call may start while the first three hang.
		st, err := b.Stats(ctxT(t), "slow")
		if err != nil {
			t.Fatal(err)
		}
		if st.Running != 3 || st.Queued != n-3 {
			t.Fatalf("stats = running %d queued %d, want 3 and %d", st.Running, st.Queued, n-3)
		}
		if calls := tg.calls.Load(); calls != 3 {
			t.Fatalf("target saw %d calls with 3 slots held, want 3", calls)
		}
		once.Do(func() { close(release) })
		for _, id := range ids {
			if task := waitFinal(t, b, id); task.Status != relay.StatusCompleted {
				t.Fatalf("task %s = %s (%s)", id, task.Status, task.Error)
			}
		}
		if p := tg.peak.Load(); p > 3 {
			t.Fatalf("peak in flight = %d, want <= 3", p)
		}
		arrivals, _ := tg.snapshot()
		sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
		// At 50 QPS (20ms apart) 40 calls span at least 39 intervals; allow scheduling jitter of
		// the arrivals themselves, not of the limit: the span is measured at the target.
		if span := arrivals[len(arrivals)-1].Sub(arrivals[0]); span < 39*20*time.Millisecond*9/10 {
			t.Fatalf("40 calls at 50 QPS arrived within %s", span)
		}
	})
}

func TestPriorityThenFIFOAndWaitNum(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		tg := newTarget(t, nil)
		setEndpoint(t, c, relay.Endpoint{Name: "p", TargetURL: tg.URL, Concurrency: 1})
		type sub struct {
			pri  int
			name string
		}
		order := []sub{{0, "a0"}, {5, "b5"}, {0, "c0"}, {9, "d9"}, {5, "e5"}}
		ids := map[string]string{}
		for _, s := range order {
			r := submit(t, c, relay.SubmitParams{Endpoint: "p", Priority: s.pri, PriorityCap: relay.MaxPriority, Body: []byte(s.name)})
			ids[s.name] = r.ID
		}
		// Expected start order: d9, b5, e5, a0, c0; WaitNum is the rank in that order.
		want := []string{"d9", "b5", "e5", "a0", "c0"}
		for i, name := range want {
			if got := get(t, c, ids[name]); got.WaitNum != int64(i) || got.Status != relay.StatusPending {
				t.Fatalf("%s: wait_num %d status %s, want %d pending", name, got.WaitNum, got.Status, i)
			}
		}
		startDispatcher(t, c, relay.DispatcherConfig{})
		for _, name := range want {
			waitFinal(t, c, ids[name])
		}
		_, bodies := tg.snapshot()
		if fmt.Sprint(bodies) != fmt.Sprint(want) {
			t.Fatalf("call order %v, want %v", bodies, want)
		}
	})
}

func TestRetriesThenFailsAndFinal4xx(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
			switch r.URL.Path {
			case "/flaky": // 503, then 429 with Retry-After, then 200
				switch n := flakyCount(r); n {
				case 1:
					w.WriteHeader(http.StatusServiceUnavailable)
				case 2:
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(http.StatusTooManyRequests)
				default:
					_, _ = w.Write([]byte("third time"))
				}
			case "/down":
				w.WriteHeader(http.StatusBadGateway)
			case "/bad":
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte("no"))
			}
		})
		setEndpoint(t, c, relay.Endpoint{Name: "r", TargetURL: tg.URL, Concurrency: 4, Tries: 3,
			RetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 20 * time.Millisecond})
		startDispatcher(t, c, relay.DispatcherConfig{Breaker: relay.BreakerConfig{Failures: 100}})

		flaky := submit(t, c, relay.SubmitParams{TargetURL: tg.URL + "/flaky"})
		down := submit(t, c, relay.SubmitParams{TargetURL: tg.URL + "/down"})
		bad := submit(t, c, relay.SubmitParams{TargetURL: tg.URL + "/bad"})

		if task := waitFinal(t, c, flaky.ID); task.Status != relay.StatusCompleted || task.Tries != 3 || string(task.Result) != "third time" {
			t.Fatalf("flaky = %s after %d tries: %q", task.Status, task.Tries, task.Result)
		}
		if task := waitFinal(t, c, down.ID); task.Status != relay.StatusFailed || task.Tries != 3 || task.HTTPStatus != 502 {
			t.Fatalf("down = %s after %d tries, http %d", task.Status, task.Tries, task.HTTPStatus)
		}
		if task := waitFinal(t, c, bad.ID); task.Status != relay.StatusFailed || task.Tries != 1 || task.HTTPStatus != 400 || string(task.Result) != "no" {
			t.Fatalf("bad = %s after %d tries, http %d %q", task.Status, task.Tries, task.HTTPStatus, task.Result)
		}
	})
}

var (
	flakyMu sync.Mutex
	flakyN  = map[string]int{}
)

// flakyCount counts calls per target server (tests share the handler code, not the servers).
func flakyCount(r *http.Request) int {
	flakyMu.Lock()
	defer flakyMu.Unlock()
	flakyN[r.Host]++
	return flakyN[r.Host]
}

func TestBreakerPausesDispatchToAFailingEndpoint(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	setEndpoint(t, c, relay.Endpoint{Name: "b", TargetURL: tg.URL, Concurrency: 1, Tries: 10,
		RetryBackoff: time.Millisecond, MaxRetryBackoff: time.Millisecond})
	d := startDispatcher(t, c, relay.DispatcherConfig{Breaker: relay.BreakerConfig{Failures: 3, CoolDown: time.Hour}})
	ids := make([]string, 5)
	for i := range ids {
		ids[i] = submit(t, c, relay.SubmitParams{Endpoint: "b"}).ID
	}
	testwait.Until(t, time.Minute, "the breaker to open", func() bool { return d.Breaker("b").State == relay.BreakerOpen })
	calls := tg.calls.Load()
	if calls != 3 {
		t.Fatalf("calls before the breaker opened = %d, want 3", calls)
	}
	// While open, no task is taken: they stay pending with their tries.
	testwait.Until(t, time.Minute, "a dispatch round held by the breaker", func() bool { return d.Stats().Held > 0 })
	if got := tg.calls.Load(); got != calls {
		t.Fatalf("calls while open = %d, want %d", got, calls)
	}
	for _, id := range ids {
		if task := get(t, c, id); task.Status != relay.StatusPending {
			t.Fatalf("task %s = %s while the breaker is open, want pending", id, task.Status)
		}
	}
}

// A dispatcher that dies mid-call (its context ends: nothing is reported) loses nothing: the
// lease ends and another dispatcher runs the task again.
func TestKilledDispatcherTaskIsRetriedAfterItsLease(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		hang := make(chan struct{})
		t.Cleanup(func() { close(hang) })
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
			if n == 1 {
				select { // the first call hangs until its caller goes away
				case <-r.Context().Done():
				case <-hang:
				}
				return
			}
			_, _ = w.Write([]byte("second"))
		})
		a := newClient(t, env, relay.Config{LeaseMargin: 100 * time.Millisecond})
		setEndpoint(t, a, relay.Endpoint{Name: "k", TargetURL: tg.URL, Timeout: 200 * time.Millisecond, Tries: 3})

		dieCtx, die := context.WithCancel(context.Background())
		d, err := relay.NewDispatcher(a, relay.DispatcherConfig{AllowPrivate: true, MaintainInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(dieCtx); err != nil {
			t.Fatal(err)
		}
		id := submit(t, a, relay.SubmitParams{Endpoint: "k"}).ID
		testwait.Until(t, time.Minute, "the first call", func() bool { return tg.calls.Load() == 1 })
		die()
		d.Stop()
		if task := get(t, a, id); task.Status != relay.StatusProcessing || task.Tries != 1 {
			t.Fatalf("after the kill: %s try %d, want processing try 1 (nothing reported)", task.Status, task.Tries)
		}
		b := newClient(t, env, relay.Config{LeaseMargin: 100 * time.Millisecond})
		startDispatcher(t, b, relay.DispatcherConfig{})
		task := waitFinal(t, b, id)
		if task.Status != relay.StatusCompleted || task.Tries != 2 || string(task.Result) != "second" {
			t.Fatalf("task = %s after %d tries (%q, %s), want completed after 2", task.Status, task.Tries, task.Result, task.Error)
		}
	})
}

func TestQueueTimeout(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "q", TargetURL: "http://127.0.0.1:1/", QueueTimeout: 50 * time.Millisecond})
		id := submit(t, c, relay.SubmitParams{Endpoint: "q"}).ID
		// Nobody dispatches this endpoint; maintenance times the task out.
		testwait.Until(t, time.Minute, "the timeout", func() bool {
			if _, err := c.MaintainOnce(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			return get(t, c, id).Status == relay.StatusTimeout
		})
		task := get(t, c, id)
		if task.WaitNum != -1 || task.EndedAt.IsZero() || task.Tries != 0 {
			t.Fatalf("timed out task = %+v", task)
		}
		st, err := c.Stats(ctxT(t), "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Queued != 0 || st.Totals[relay.StatusTimeout] != 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

func TestCancelPendingAndRunning(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		release := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
			<-release
			_, _ = w.Write([]byte("late result " + strconv.FormatInt(n, 10)))
		})
		setEndpoint(t, c, relay.Endpoint{Name: "c", TargetURL: tg.URL, Concurrency: 1})
		d := startDispatcher(t, c, relay.DispatcherConfig{})
		running := submit(t, c, relay.SubmitParams{Endpoint: "c"}).ID
		testwait.Until(t, time.Minute, "the call", func() bool { return tg.inFlight.Load() == 1 })
		pending := submit(t, c, relay.SubmitParams{Endpoint: "c"}).ID
		after := submit(t, c, relay.SubmitParams{Endpoint: "c"}).ID
		if get(t, c, after).WaitNum != 1 {
			t.Fatal("third task should have one ahead")
		}

		res, err := c.Cancel(ctxT(t), pending)
		if err != nil || !res.Cancelled || res.Status != relay.StatusCancelled {
			t.Fatalf("Cancel(pending) = %+v, %v", res, err)
		}
		if got := get(t, c, after).WaitNum; got != 0 {
			t.Fatalf("after cancelling the task ahead, wait_num = %d, want 0", got)
		}
		res, err = c.Cancel(ctxT(t), running)
		if err != nil || !res.Cancelled {
			t.Fatalf("Cancel(running) = %+v, %v", res, err)
		}
		// The slot stays taken while the call runs, so the next task has not started.
		if task := get(t, c, after); task.Status != relay.StatusPending {
			t.Fatalf("next task = %s while the cancelled call still runs", task.Status)
		}
		once.Do(func() { close(release) })
		if task := waitFinal(t, c, after); task.Status != relay.StatusCompleted {
			t.Fatalf("next task = %s", task.Status)
		}
		task := get(t, c, running)
		if task.Status != relay.StatusCancelled || task.Result != nil {
			t.Fatalf("cancelled running task = %s with result %q, want cancelled, result discarded", task.Status, task.Result)
		}
		if d.Stats().Discarded != 1 {
			t.Fatalf("discarded = %d, want 1", d.Stats().Discarded)
		}
		if tg.calls.Load() != 2 {
			t.Fatalf("calls = %d, want 2 (the cancelled pending task never ran)", tg.calls.Load())
		}
		res, err = c.Cancel(ctxT(t), after)
		if err != nil || res.Cancelled || res.Status != relay.StatusCompleted {
			t.Fatalf("Cancel(completed) = %+v, %v", res, err)
		}
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	setEndpoint(t, c, relay.Endpoint{Name: "ra", TargetURL: tg.URL, RetryBackoff: time.Millisecond, MaxRetryBackoff: time.Millisecond})
	startDispatcher(t, c, relay.DispatcherConfig{})
	id := submit(t, c, relay.SubmitParams{Endpoint: "ra"}).ID
	if task := waitFinal(t, c, id); task.Status != relay.StatusCompleted || task.Tries != 2 {
		t.Fatalf("task = %s after %d tries", task.Status, task.Tries)
	}
	arrivals, _ := tg.snapshot()
	// Never earlier than asked (the backoff alone would be 1ms); a few ms of clock noise allowed.
	if gap := arrivals[1].Sub(arrivals[0]); gap < 990*time.Millisecond {
		t.Fatalf("retry came %s after a Retry-After of 1s", gap)
	}
}

// After the cool-down one probe goes; when it succeeds the breaker closes and the rest follow.
func TestBreakerProbeClosesIt(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("back"))
	})
	setEndpoint(t, c, relay.Endpoint{Name: "probe", TargetURL: tg.URL, Concurrency: 1, Tries: 5,
		RetryBackoff: time.Millisecond, MaxRetryBackoff: time.Millisecond})
	d := startDispatcher(t, c, relay.DispatcherConfig{Breaker: relay.BreakerConfig{Failures: 2, CoolDown: 200 * time.Millisecond}})
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = submit(t, c, relay.SubmitParams{Endpoint: "probe"}).ID
	}
	for _, id := range ids {
		if task := waitFinal(t, c, id); task.Status != relay.StatusCompleted {
			t.Fatalf("task %s = %s", id, task.Status)
		}
	}
	if st := d.Breaker("probe"); st.State != relay.BreakerClosed {
		t.Fatalf("breaker = %s after the probe succeeded", st.State)
	}
	if d.Stats().Held == 0 {
		t.Fatal("no dispatch round was held while the breaker was open")
	}
	if got := tg.calls.Load(); got != 6 {
		t.Fatalf("calls = %d, want 6 (2 failures, then the 4 tasks)", got)
	}
}

// A settings change made through another Client reaches running dispatchers.
func TestConcurrencyChangeReachesDispatchers(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) { <-release })
	admin := newClient(t, env, relay.Config{})
	worker := newClient(t, env, relay.Config{})
	setEndpoint(t, admin, relay.Endpoint{Name: "grow", TargetURL: tg.URL, Concurrency: 1})
	startDispatcher(t, worker, relay.DispatcherConfig{})
	for range 5 {
		submit(t, admin, relay.SubmitParams{Endpoint: "grow"})
	}
	testwait.Until(t, time.Minute, "one call", func() bool { return tg.inFlight.Load() == 1 })
	setEndpoint(t, admin, relay.Endpoint{Name: "grow", TargetURL: tg.URL, Concurrency: 3})
	testwait.Until(t, time.Minute, "three calls after the change", func() bool { return tg.inFlight.Load() == 3 })
	if p := tg.peak.Load(); p != 3 {
		t.Fatalf("peak = %d, want 3", p)
	}
	once.Do(func() { close(release) })
}

// Two Stops at once both return once the dispatcher stopped (the second one closed a closed
// channel and panicked), and the dispatcher starts again afterwards.
func TestDispatcherStopsTwiceAtOnce(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	d, err := relay.NewDispatcher(c, relay.DispatcherConfig{AllowPrivate: true, MaintainInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := d.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(d.Stop)
		}
		wg.Wait()
	}
}
