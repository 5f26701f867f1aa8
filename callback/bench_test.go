package callback_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
)

// benchCallbacks sets up a namespace whose callbacks go to a local no-op receiver.
func benchCallbacks(b *testing.B) (*redistest.Env, *queue.Client, *httptest.Server, *atomic.Int64) {
	return benchCallbacksOn(b, redistest.New(b))
}

// benchCallbacksOn is benchCallbacks on the Redis of env (a standalone server or a Cluster).
func benchCallbacksOn(b *testing.B, env *redistest.Env) (*redistest.Env, *queue.Client, *httptest.Server, *atomic.Int64) {
	q, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = q.Close() })
	calls := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	store, err := callback.NewStore(env.Client, env.Prefix)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := store.RotateSecret(ctx, "bench", ""); err != nil {
		b.Fatal(err)
	}
	if _, err := store.AddDestination(ctx, "bench", srv.URL); err != nil {
		b.Fatal(err)
	}
	if err := store.SetAllowPrivate(ctx, "bench", true); err != nil {
		b.Fatal(err)
	}
	return env, q, srv, calls
}

func startDeliverer(b *testing.B, cfg callback.DelivererConfig) *callback.Deliverer {
	d, err := callback.NewDeliverer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Stop)
	return d
}

// BenchmarkCallbackDeliveries measures signed callbacks delivered per second to a local no-op
// receiver: b.N jobs due at once, then one deliverer with 64 workers leases, signs, calls and acks
// them all. The deliverer knows the request queue's endpoints, as in the server, but none covers
// the callbacks' URL: they go under no endpoint's limits.
func BenchmarkCallbackDeliveries(b *testing.B) {
	env, q, srv, calls := benchCallbacks(b)
	c := benchRelay(b, env, relay.Endpoint{Name: "elsewhere", TargetURL: srv.URL + "/elsewhere", Concurrency: 1})
	benchDeliveries(b, env, callback.DelivererConfig{Queue: q, Redis: env.Client, Workers: 64, Relay: c}, srv.URL+"/hook", calls)
}

// BenchmarkCallbackDeliveriesUnderEndpoint is BenchmarkCallbackDeliveries with the callbacks under
// an endpoint's target URL, with limits that never bind (QPS 100,000, Concurrency 10,000): every
// call takes and gives back one of its slots (two more script calls per delivery).
func BenchmarkCallbackDeliveriesUnderEndpoint(b *testing.B) {
	env, q, srv, calls := benchCallbacks(b)
	c := benchRelay(b, env, relay.Endpoint{Name: "svc", TargetURL: srv.URL + "/hook", QPS: 100_000, Concurrency: 10_000})
	benchDeliveries(b, env, callback.DelivererConfig{Queue: q, Redis: env.Client, Workers: 64, Relay: c}, srv.URL+"/hook", calls)
	st, err := c.Stats(context.Background(), "svc")
	if err != nil {
		b.Fatal(err)
	}
	if st.SlotsReleased != int64(b.N) {
		b.Fatalf("%d slots released for %d deliveries", st.SlotsReleased, b.N)
	}
}

func benchRelay(b *testing.B, env *redistest.Env, e relay.Endpoint) *relay.Client {
	c, err := relay.NewClient(env.Client, relay.Config{Prefix: env.Prefix})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	if _, err := c.SetEndpoint(context.Background(), e); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchDeliveries publishes b.N callback jobs to url, due at once, and runs a deliverer until all
// are delivered. Besides the rate (wall clock, which a busy machine moves) it reports the CPU
// time per delivery of this process (deliverer, receiver and test) and of Redis, which the
// machine's other load moves much less.
func benchDeliveries(b *testing.B, env *redistest.Env, cfg callback.DelivererConfig, url string, calls *atomic.Int64) {
	ctx := context.Background()
	cb := &queue.Callback{URL: url, Timeout: 5 * time.Second}
	for i := 0; i < b.N; i += 1000 {
		ps := make([]queue.PublishParams, min(1000, b.N-i))
		for j := range ps {
			ps[j] = queue.PublishParams{Namespace: "bench", Queue: "q", Payload: []byte(`{"order":1}`), Callback: cb}
		}
		if _, err := cfg.Queue.PublishMany(ctx, ps); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu0, rcpu0 := cpustat.Self(), cpustat.MustRedis(b, env.Client)
	start := time.Now()
	d := startDeliverer(b, cfg)
	testwait.Until(b, 5*time.Minute, fmt.Sprintf("%d callbacks delivered", b.N), func() bool {
		return d.Stats().Delivered >= int64(b.N)
	})
	elapsed := time.Since(start)
	cpu, rcpu := cpustat.Self()-cpu0, cpustat.MustRedis(b, env.Client)-rcpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/delivery")
	b.ReportMetric(float64(rcpu.Microseconds())/float64(b.N), "redis-cpu-µs/delivery")
	if got := calls.Load(); got != int64(b.N) {
		b.Fatalf("receiver got %d calls for %d jobs", got, b.N)
	}
}

// BenchmarkCallbackLateness publishes callback jobs that come due at 1,000 a second (each 200ms
// after its publish) for 10 s and reports how late they were sent (the deliverer's lease by
// Redis's clock after the due time, plus the time to send), b.N ignored: run with -benchtime 1x.
// early counts calls sent before they were due; it must be 0.
func BenchmarkCallbackLateness(b *testing.B) {
	const perSecond, seconds = 1000, 10
	env, q, srv, _ := benchCallbacks(b)
	ctx := context.Background()
	var mu sync.Mutex
	var lateness []time.Duration
	startDeliverer(b, callback.DelivererConfig{Queue: q, Redis: env.Client, Workers: 64, OnDelivery: func(ev callback.Event) {
		mu.Lock()
		lateness = append(lateness, ev.Lateness)
		mu.Unlock()
	}})
	cb := &queue.Callback{URL: srv.URL + "/hook", Timeout: 5 * time.Second}
	b.ResetTimer()
	// 10 jobs every 10ms, each due 200ms later.
	tick := time.NewTicker(10 * time.Millisecond)
	total := 0
	for range seconds * 100 {
		<-tick.C
		ps := make([]queue.PublishParams, perSecond/100)
		for j := range ps {
			ps[j] = queue.PublishParams{Namespace: "bench", Queue: "q", Callback: cb, Delay: 200 * time.Millisecond}
		}
		if _, err := q.PublishMany(ctx, ps); err != nil {
			b.Fatal(err)
		}
		total += len(ps)
	}
	tick.Stop()
	testwait.Until(b, 30*time.Second, fmt.Sprintf("%d callbacks delivered", total), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lateness) >= total
	})
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lateness)
	early := 0
	for _, l := range lateness {
		if l < 0 {
			early++
		}
	}
	pct := func(p float64) float64 {
		return float64(lateness[int(p*float64(len(lateness)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
	b.ReportMetric(float64(early), "early")
}
