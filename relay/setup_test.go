package relay_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/mysqltest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(benchRoleEnv); role != "" {
		os.Exit(runBenchRole(role))
	}
	redistest.Main(m, mysqltest.Stop)
}

// testKey is a permit or grant key for tests (32 bytes).
var testKey = []byte("0123456789abcdef0123456789abcdef")

// newClient returns a Client on the test's prefix, closed when the test ends.
func newClient(t testing.TB, env *redistest.Env, cfg relay.Config) *relay.Client {
	t.Helper()
	cfg.Prefix = env.Prefix
	if cfg.PermitKeys == nil {
		cfg.PermitKeys = [][]byte{testKey}
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = 50 * time.Millisecond
	}
	c, err := relay.NewClient(env.Client, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startDispatcher runs a Dispatcher until the test ends.
func startDispatcher(t *testing.T, c *relay.Client, cfg relay.DispatcherConfig) *relay.Dispatcher {
	t.Helper()
	cfg.AllowPrivate = true // httptest targets are on loopback
	if cfg.MaintainInterval == 0 {
		cfg.MaintainInterval = 50 * time.Millisecond
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 200 * time.Millisecond
	}
	d, err := relay.NewDispatcher(c, cfg)
	if err != nil {
		t.Fatalf("NewDispatcher: %v", err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(d.Stop)
	return d
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// target is a real HTTP server that records what reaches it.
type target struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals []time.Time
	paths    []string
	bodies   []string
	inFlight atomic.Int64
	peak     atomic.Int64
	calls    atomic.Int64
	handle   func(w http.ResponseWriter, r *http.Request, n int64) // n: 1-based call number
}

func newTarget(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, n int64)) *target {
	t.Helper()
	tg := &target{handle: handle}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now() // first: what follows (the body, the lock) is not the call's arrival
		cur := tg.inFlight.Add(1)
		defer tg.inFlight.Add(-1)
		for {
			p := tg.peak.Load()
			if cur <= p || tg.peak.CompareAndSwap(p, cur) {
				break
			}
		}
		n := tg.calls.Add(1)
		var body [4096]byte
		k, _ := r.Body.Read(body[:])
		tg.mu.Lock()
		tg.arrivals = append(tg.arrivals, arrived)
		tg.paths = append(tg.paths, r.URL.RequestURI())
		tg.bodies = append(tg.bodies, string(body[:k]))
		tg.mu.Unlock()
		if tg.handle != nil {
			tg.handle(w, r, n)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) snapshot() (arrivals []time.Time, bodies []string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]time.Time(nil), tg.arrivals...), append([]string(nil), tg.bodies...)
}

func setEndpoint(t testing.TB, c *relay.Client, e relay.Endpoint) relay.Endpoint {
	t.Helper()
	got, err := c.SetEndpoint(ctxT(t), e)
	if err != nil {
		t.Fatalf("SetEndpoint(%s): %v", e.Name, err)
	}
	return got
}

func submit(t testing.TB, c *relay.Client, p relay.SubmitParams) relay.SubmitResult {
	t.Helper()
	r, err := c.Submit(ctxT(t), p)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return r
}

func get(t testing.TB, c *relay.Client, id string) relay.Task {
	t.Helper()
	task, err := c.Get(ctxT(t), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return task
}

// waitFinal waits (long-poll) until the task has ended.
func waitFinal(t testing.TB, c *relay.Client, id string) relay.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		task, err := c.Wait(ctxT(t), id, 5*time.Second)
		if err != nil {
			t.Fatalf("Wait(%s): %v", id, err)
		}
		if task.Status.Final() {
			return task
		}
	}
	t.Fatalf("task %s did not end", id)
	return relay.Task{}
}
