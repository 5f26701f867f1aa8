package callback_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// cbFixture is what a callback test needs: a queue client, the namespace's callback settings and
// a receiver that records what it gets.
type cbFixture struct {
	env    *redistest.Env
	q      *queue.Client
	store  *callback.Store
	ns     string
	secret string
	recv   *receiver
}

// receiver is a real HTTP server that records every call and answers with respond.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	calls   []receivedCall
	respond func(n int, w http.ResponseWriter) // n: 1 for the first call
}

type receivedCall struct {
	at     time.Time
	header http.Header
	body   []byte
	method string
	path   string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{respond: func(int, http.ResponseWriter) {}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.calls = append(r.calls, receivedCall{at: time.Now(), header: req.Header.Clone(), body: body, method: req.Method, path: req.URL.Path})
		n, respond := len(r.calls), r.respond
		r.mu.Unlock()
		respond(n, w)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setRespond(f func(n int, w http.ResponseWriter)) {
	r.mu.Lock()
	r.respond = f
	r.mu.Unlock()
}

func (r *receiver) got() []receivedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedCall(nil), r.calls...)
}

func newCallbackFixture(t *testing.T, env *redistest.Env) *cbFixture {
	t.Helper()
	q, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatalf("queue.NewClient: %v", err)
	}
	t.Cleanup(func() { _ = q.Close() })
	store, err := callback.NewStore(env.Client, env.Prefix)
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	f := &cbFixture{env: env, q: q, store: store, ns: "shop", recv: newReceiver(t)}
	ctx := ctxT(t)
	live, err := store.RotateSecret(ctx, f.ns, "")
	if err != nil || len(live) != 1 {
		t.Fatalf("RotateSecret = %v, %v", live, err)
	}
	f.secret = live[0]
	if _, err := store.AddDestination(ctx, f.ns, f.recv.srv.URL+"/hooks"); err != nil {
		t.Fatalf("AddDestination: %v", err)
	}
	// httptest listens on loopback: this namespace's receivers live on the private network.
	if err := store.SetAllowPrivate(ctx, f.ns, true); err != nil {
		t.Fatalf("SetAllowPrivate: %v", err)
	}
	return f
}

// start runs a deliverer until the test ends.
func (f *cbFixture) start(t *testing.T, cfg callback.DelivererConfig) *callback.Deliverer {
	t.Helper()
	if cfg.Queue == nil {
		cfg.Queue = f.q
	}
	if cfg.Redis == nil {
		cfg.Redis = f.env.Client
	}
	cfg.SettingsTTL = time.Millisecond
	d, err := callback.NewDeliverer(cfg)
	if err != nil {
		t.Fatalf("NewDeliverer: %v", err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(d.Stop)
	return d
}

func (f *cbFixture) publish(t *testing.T, p queue.PublishParams) string {
	t.Helper()
	p.Namespace = f.ns
	if p.Queue == "" {
		p.Queue = "orders"
	}
	res, err := f.q.Publish(ctxT(t), p)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return res.ID
}

func (f *cbFixture) hook(path string) *queue.Callback {
	return &queue.Callback{URL: f.recv.srv.URL + "/hooks" + path, Timeout: 2 * time.Second}
}

// waitState polls the job until it is in state.
func (f *cbFixture) waitState(t *testing.T, id string, state queue.State) *queue.Job {
	t.Helper()
	var job *queue.Job
	testwait.Until(t, time.Minute, "job "+id+" "+string(state), func() bool {
		j, err := f.q.Get(ctxT(t), f.ns, "orders", id)
		if err != nil && !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("Get: %v", err)
		}
		job = j
		return j != nil && j.State == state
	})
	return job
}

func TestCallbackDeliveredSignedAndDone(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		f.recv.setRespond(func(_ int, w http.ResponseWriter) { _, _ = io.WriteString(w, "closed order 42") })
		var events sync.Map
		f.start(t, callback.DelivererConfig{Workers: 4, OnDelivery: func(ev callback.Event) { events.Store(ev.JobID, ev) }})
		cb := f.hook("/close")
		cb.Header = map[string]string{"X-Tenant": "acme"}
		id := f.publish(t, queue.PublishParams{Payload: []byte(`{"order":42}`), Delay: 100 * time.Millisecond, Callback: cb})

		job := f.waitState(t, id, queue.StateDone)
		if string(job.Result) != "closed order 42" {
			t.Fatalf("result = %q", job.Result)
		}
		calls := f.recv.got()
		if len(calls) != 1 {
			t.Fatalf("%d calls, want 1", len(calls))
		}
		c := calls[0]
		if c.method != http.MethodPost || c.path != "/hooks/close" || string(c.body) != `{"order":42}` {
			t.Fatalf("call = %s %s %s", c.method, c.path, c.body)
		}
		if c.header.Get("X-Tenant") != "acme" || c.header.Get("Content-Type") != "application/json" || c.header.Get(callback.HeaderWebhookID) != id {
			t.Fatalf("headers = %v", c.header)
		}
		if err := callback.Verify(f.secret, c.header, c.body); err != nil {
			t.Fatalf("Verify: %v", err)
		}
		var v any
		testwait.Until(t, time.Minute, "the delivery event", func() bool {
			var ok bool
			v, ok = events.Load(id)
			return ok
		})
		if ev := v.(callback.Event); ev.Outcome != callback.OutcomeDelivered || ev.Status != 200 || ev.Lateness < 0 {
			t.Fatalf("event = %+v", ev)
		}
	})
}

func TestCallbackRetriesWithBackoffThenDeadThenRespawn(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		f.recv.setRespond(func(_ int, w http.ResponseWriter) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "down for maintenance")
		})
		f.start(t, callback.DelivererConfig{Workers: 2})
		backoff := queue.Backoff{Base: 40 * time.Millisecond, Max: time.Second}
		id := f.publish(t, queue.PublishParams{Tries: 3, Backoff: backoff, Callback: f.hook("")})

		dead := f.waitState(t, id, queue.StateDead)
		if !strings.Contains(dead.LastError, "HTTP 503") || !strings.Contains(dead.LastError, "down for maintenance") {
			t.Fatalf("LastError = %q, want the last status and body", dead.LastError)
		}
		calls := f.recv.got()
		if len(calls) != 3 {
			t.Fatalf("%d calls before the dead letter, want 3 (the job's tries)", len(calls))
		}
		// Retries wait for the job's backoff: base, then doubled. Redis keeps time in whole
		// milliseconds, so a gap may look up to 2ms short on the local clock.
		for i, want := range []time.Duration{backoff.Base, 2 * backoff.Base} {
			if gap := calls[i+1].at.Sub(calls[i].at); gap < want-2*time.Millisecond {
				t.Fatalf("try %d came %s after try %d, before the backoff of %s", i+2, gap, i+1, want)
			}
		}

		f.recv.setRespond(func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) })
		respawned, err := f.q.DeadRespawn(ctxT(t), queue.DeadRespawnParams{Namespace: f.ns, Queue: "orders", IDs: []string{id}})
		if err != nil || len(respawned) != 1 {
			t.Fatalf("DeadRespawn = %v, %v", respawned, err)
		}
		if done := f.waitState(t, id, queue.StateDone); len(done.Result) != 0 {
			t.Fatalf("result of a 204 = %q, want empty", done.Result)
		}
		calls = f.recv.got()
		if len(calls) != 4 {
			t.Fatalf("%d calls, want 4", len(calls))
		}
		for _, c := range calls {
			if c.header.Get(callback.HeaderWebhookID) != id {
				t.Fatalf("webhook-id %q, want the job id %s on every try", c.header.Get(callback.HeaderWebhookID), id)
			}
		}
	})
}

func TestCallback4xxIsFinal(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	f.recv.setRespond(func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) })
	f.start(t, callback.DelivererConfig{Workers: 2})
	id := f.publish(t, queue.PublishParams{Tries: 5, Backoff: queue.Backoff{Base: time.Millisecond}, Callback: f.hook("")})
	dead := f.waitState(t, id, queue.StateDead)
	if !strings.Contains(dead.LastError, "HTTP 410") || dead.RemainingTries != 4 {
		t.Fatalf("dead job = %+v", dead)
	}
	if n := len(f.recv.got()); n != 1 {
		t.Fatalf("%d calls, want 1: a 410 is final", n)
	}
}

func TestCallbackRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	f.recv.setRespond(func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	f.start(t, callback.DelivererConfig{Workers: 2})
	// The job's own backoff is 1ms: only Retry-After can make the second try wait a second.
	id := f.publish(t, queue.PublishParams{Tries: 3, Backoff: queue.Backoff{Base: time.Millisecond}, Callback: f.hook("")})
	f.waitState(t, id, queue.StateDone)
	calls := f.recv.got()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	if gap := calls[1].at.Sub(calls[0].at); gap < time.Second-2*time.Millisecond {
		t.Fatalf("the retry came %s after the 429, before its Retry-After of 1s", gap)
	}
}

func TestCallbackKilledDelivererIsRedeliveredWithTheSameID(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	// Deliverer A has a Redis connection of its own; closing it while A's call is in flight is A
	// dying: it can never report the call.
	rdbA, err := redisx.NewClient(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	qA, err := queue.NewClient(rdbA, queue.Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qA.Close() })
	inFlight, unblock := make(chan struct{}), make(chan struct{})
	f.recv.setRespond(func(n int, w http.ResponseWriter) {
		if n == 1 {
			close(inFlight)
			<-unblock
		}
		_, _ = io.WriteString(w, "ok")
	})
	id := f.publish(t, queue.PublishParams{TTR: 700 * time.Millisecond, Callback: &queue.Callback{URL: f.recv.srv.URL + "/hooks", Timeout: 500 * time.Millisecond}})
	a := f.start(t, callback.DelivererConfig{Queue: qA, Redis: rdbA, Workers: 1, ShutdownTimeout: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	<-inFlight
	_ = rdbA.Close()
	close(unblock)

	f.start(t, callback.DelivererConfig{Workers: 1})
	job := f.waitState(t, id, queue.StateDone)
	calls := f.recv.got()
	if len(calls) != 2 || job.Deliveries != 2 {
		t.Fatalf("%d calls, %d deliveries; want 2 of each (the second after the lease)", len(calls), job.Deliveries)
	}
	for _, c := range calls {
		if c.header.Get(callback.HeaderWebhookID) != id {
			t.Fatalf("webhook-id %q, want %s on both calls", c.header.Get(callback.HeaderWebhookID), id)
		}
	}
	if st := a.Stats(); st.Delivered != 0 {
		t.Fatalf("the killed deliverer recorded a delivery: %+v", st)
	}
}

func TestCallbackDestinationRefused(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	ctx := ctxT(t)
	// A second namespace that may not reach private addresses, with the receiver allowed both by
	// its address and by a name that resolves to loopback (what DNS rebinding would do).
	strict := "strict"
	port := f.recv.srv.URL[strings.LastIndex(f.recv.srv.URL, ":")+1:]
	for _, p := range []string{f.recv.srv.URL, "http://localhost:" + port} {
		if _, err := f.store.AddDestination(ctx, strict, p); err != nil {
			t.Fatal(err)
		}
	}
	f.start(t, callback.DelivererConfig{Workers: 2})
	for _, tc := range []struct {
		name, ns, url, want string
	}{
		{"not allowed", f.ns, f.recv.srv.URL + "/elsewhere", "not allowed"},
		{"private address", strict, f.recv.srv.URL + "/x", "loopback"},
		{"name resolving to loopback", strict, "http://localhost:" + port + "/x", "loopback"},
	} {
		res, err := f.q.Publish(ctx, queue.PublishParams{Namespace: tc.ns, Queue: "orders", Tries: 3, Callback: &queue.Callback{URL: tc.url}})
		if err != nil {
			t.Fatal(err)
		}
		var job *queue.Job
		testwait.Until(t, time.Minute, tc.name+": dead", func() bool {
			job, _ = f.q.Get(ctx, tc.ns, "orders", res.ID)
			return job != nil && job.State == queue.StateDead
		})
		if !strings.Contains(job.LastError, tc.want) || job.RemainingTries != 2 {
			t.Fatalf("%s: dead job after %d tries with %q, want one try and %q", tc.name, job.Tries-job.RemainingTries, job.LastError, tc.want)
		}
	}
	if n := len(f.recv.got()); n != 0 {
		t.Fatalf("the receiver got %d calls from refused destinations", n)
	}
}

func TestTwoDeliverersShareCallbacksWithoutDuplicates(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		a := f.start(t, callback.DelivererConfig{Workers: 4})
		b := f.start(t, callback.DelivererConfig{Workers: 4})
		const n = 300
		ps := make([]queue.PublishParams, n)
		for i := range ps {
			ps[i] = queue.PublishParams{Namespace: f.ns, Queue: "orders", Callback: f.hook(""), Delay: time.Duration(i%50) * time.Millisecond}
		}
		if _, err := f.q.PublishMany(ctxT(t), ps); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, 30*time.Second, "every callback delivered", func() bool {
			return a.Stats().Delivered+b.Stats().Delivered == n
		})
		seen := map[string]int{}
		for _, c := range f.recv.got() {
			seen[c.header.Get(callback.HeaderWebhookID)]++
		}
		if len(seen) != n {
			t.Fatalf("%d distinct webhook-ids, want %d", len(seen), n)
		}
		for id, k := range seen {
			if k != 1 {
				t.Fatalf("job %s delivered %d times with no lease expiry", id, k)
			}
		}
		t.Logf("deliverer a: %+v, b: %+v", a.Stats(), b.Stats())
	})
}

func TestCallbackSettingsStore(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	store, err := callback.NewStore(env.Client, env.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	first, err := store.RotateSecret(ctx, "ns", "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := store.RotateSecret(ctx, "ns", "")
	if err != nil || len(second) != 2 || second[1] != first[0] {
		t.Fatalf("after a rotation: %v, %v", second, err)
	}
	third, _ := store.RotateSecret(ctx, "ns", "")
	if len(third) != 2 || third[1] != second[0] {
		t.Fatalf("a third secret must push the oldest out: %v", third)
	}
	if err := store.RetireSecret(ctx, "ns"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RotateSecret(ctx, "ns", "not-a-secret"); !errors.Is(err, sluice.ErrInvalid) {
		t.Fatalf("bad secret: %v", err)
	}
	if _, err := store.AddDestination(ctx, "ns", "ftp://x"); !errors.Is(err, sluice.ErrInvalid) {
		t.Fatalf("bad prefix: %v", err)
	}
	if added, err := store.AddDestination(ctx, "ns", "https://hooks.example.com/a"); err != nil || !added {
		t.Fatalf("AddDestination = %v, %v", added, err)
	}
	for i := range callback.MaxDestinations - 1 {
		if _, err := store.AddDestination(ctx, "ns", "https://hooks.example.com/"+strings.Repeat("b", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.AddDestination(ctx, "ns", "https://hooks.example.com/full"); !errors.Is(err, callback.ErrTooManyDestinations) {
		t.Fatalf("past the bound: %v", err)
	}
	set, err := store.Settings(ctx, "ns")
	if err != nil || len(set.Secrets) != 1 || set.Secrets[0] != third[0] || len(set.Destinations) != callback.MaxDestinations || set.AllowPrivate {
		t.Fatalf("Settings = %d secrets, %d destinations, %v", len(set.Secrets), len(set.Destinations), err)
	}
	if removed, err := store.RemoveDestination(ctx, "ns", "https://hooks.example.com/a"); err != nil || !removed {
		t.Fatalf("RemoveDestination = %v, %v", removed, err)
	}
	if err := store.Delete(ctx, "ns"); err != nil {
		t.Fatal(err)
	}
	if set, _ := store.Settings(ctx, "ns"); len(set.Secrets)+len(set.Destinations) != 0 {
		t.Fatalf("after Delete: %+v", set)
	}
}

func TestCallbackDestinationConcurrencyHoldsAcrossDeliverers(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	peak := peakRecorder(f)
	cfg := callback.DelivererConfig{Workers: 4, DestinationConcurrency: 2}
	a, b := f.start(t, cfg), f.start(t, cfg)
	const n = 40
	for range n {
		f.publish(t, queue.PublishParams{Callback: f.hook("")})
	}
	testwait.Until(t, 30*time.Second, "every callback delivered", func() bool {
		return a.Stats().Delivered+b.Stats().Delivered == n
	})
	if p := peak.Load(); p > 2 {
		t.Fatalf("%d calls in flight to one destination, over its limit of 2", p)
	}
}

// A second Start of a running Deliverer is refused; Stop is safe twice and from two goroutines at
// once; a stopped Deliverer starts again and delivers.
func TestDelivererStartStopRestart(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	d, err := callback.NewDeliverer(callback.DelivererConfig{Queue: f.q, Redis: env.Client, SettingsTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	for round := range 2 {
		if err := d.Start(ctxT(t)); err != nil {
			t.Fatalf("round %d: Start: %v", round, err)
		}
		if err := d.Start(ctxT(t)); !errors.Is(err, startstop.ErrAlreadyStarted) {
			t.Fatalf("round %d: second Start = %v, want startstop.ErrAlreadyStarted", round, err)
		}
		id := f.publish(t, queue.PublishParams{Callback: f.hook("/again")})
		f.waitState(t, id, queue.StateDone)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(d.Stop)
		}
		wg.Wait()
		d.Stop()
		if d.Running() {
			t.Fatalf("round %d: running after Stop", round)
		}
	}
	if st := d.Stats(); st.Delivered != 2 {
		t.Fatalf("stats %+v, want 2 delivered", st)
	}
}
