package callback_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// BenchmarkIdleCallbackLanes measures what many idle callback lanes cost while a deliverer runs
// with its defaults, b.N ignored (run with -benchtime 1x): SLUICE_BENCH_IDLE_LANES queues (default
// 10,000) each get one callback job, delivered, so each is a registered, empty callback lane. Once
// the setup's leases have run out, over SLUICE_BENCH_IDLE_WINDOW (default 30s) it reads Redis's CPU time and the commands it ran,
// and how late a callback is delivered: one delayed 1 s into the last lane while the deliverer
// runs (its notification arrives), and one published into the middle lane while no deliverer runs
// (its notification is lost), counted from the start of a new deliverer. It uses only APIs an
// older version has too, so the same file measures it side by side (docs/benchmarks.md). It runs
// on a standalone server and on a 3-master Cluster (Redis's CPU and commands summed over the
// masters).
func BenchmarkIdleCallbackLanes(b *testing.B) {
	b.Run("standalone", func(b *testing.B) { benchIdleCallbackLanes(b, redistest.New(b)) })
	b.Run("cluster", func(b *testing.B) { benchIdleCallbackLanes(b, redistest.NewCluster(b)) })
}

func benchIdleCallbackLanes(b *testing.B, env *redistest.Env) {
	n := benchEnvInt("SLUICE_BENCH_IDLE_LANES", 10000)
	window := benchEnvDuration("SLUICE_BENCH_IDLE_WINDOW", 30*time.Second)
	env, q, _, _ := benchCallbacksOn(b, env)
	ctx := context.Background()
	arrived := newArrivals()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.add(r.URL.Path)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	store, err := callback.NewStore(env.Client, env.Prefix)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.AddDestination(ctx, "bench", srv.URL); err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := callback.DelivererConfig{Queue: q, Redis: env.Client, Workers: 64, Logger: quiet}
	lane := func(i int) string { return fmt.Sprintf("lane%06d", i) }
	hook := func(path string) *queue.Callback {
		return &queue.Callback{URL: srv.URL + path, Timeout: 5 * time.Second}
	}

	// The setup's leases are short, and the window starts after they ended: a deliverer may visit
	// a lane when its lease ends, which is part of delivering, not of idling.
	const setupTTR = 6 * time.Second
	d := startDeliverer(b, cfg)
	for start := 0; start < n; start += 1000 {
		ps := make([]queue.PublishParams, 0, 1000)
		for i := start; i < min(start+1000, n); i++ {
			ps = append(ps, queue.PublishParams{Namespace: "bench", Queue: lane(i), Callback: hook("/setup"), TTR: setupTTR})
		}
		if _, err := q.PublishMany(ctx, ps); err != nil {
			b.Fatal(err)
		}
	}
	// Not testwait: a benchmark's own deadline, with the reason it failed.
	for end := time.Now().Add(10 * time.Minute); d.Stats().Delivered < int64(n); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			b.Fatalf("%d of %d setup callbacks delivered in 10 minutes", d.Stats().Delivered, n)
		}
	}

	time.Sleep(setupTTR + 2*time.Second) // a pause: the setup's leases run out

	b.ResetTimer()
	cpu0, cmd0 := redistest.CPUSeconds(b, env.Client), redisCommands(b, env.Client)
	time.Sleep(window) // the window measured: the idle lanes' cost is what Redis spends in it
	cpu, cmds := redistest.CPUSeconds(b, env.Client)-cpu0, redisCommands(b, env.Client)-cmd0

	due := time.Now().Add(time.Second)
	if _, err := q.Publish(ctx, queue.PublishParams{Namespace: "bench", Queue: lane(n - 1), Callback: hook("/delayed"), RunAt: due}); err != nil {
		b.Fatal(err)
	}
	delayed := arrived.wait(b, "/delayed").Sub(due)

	d.Stop()
	if _, err := q.Publish(ctx, queue.PublishParams{Namespace: "bench", Queue: lane(n / 2), Callback: hook("/unannounced")}); err != nil {
		b.Fatal(err)
	}
	started := time.Now()
	startDeliverer(b, cfg)
	unannounced := arrived.wait(b, "/unannounced").Sub(started)
	b.StopTimer()

	b.ReportMetric(float64(n), "lanes")
	b.ReportMetric(100*cpu/window.Seconds(), "redis-cpu-%")
	b.ReportMetric(float64(cmds)/window.Seconds(), "redis-cmds/s")
	b.ReportMetric(float64(delayed.Milliseconds()), "delayed-late-ms")
	b.ReportMetric(float64(unannounced.Milliseconds()), "unannounced-ms")
}

// arrivals records when the receiver first got a call on each path.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func newArrivals() *arrivals { return &arrivals{at: map[string]time.Time{}} }

func (a *arrivals) add(path string) {
	a.mu.Lock()
	if _, ok := a.at[path]; !ok {
		a.at[path] = time.Now()
	}
	a.mu.Unlock()
}

// wait polls every millisecond, for at most two minutes, for a call on path and returns its time
// (not testwait: the time read is the receiver's, not the poll's).
func (a *arrivals) wait(b *testing.B, path string) time.Time {
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(time.Millisecond) {
		a.mu.Lock()
		at, ok := a.at[path]
		a.mu.Unlock()
		if ok {
			return at
		}
	}
	b.Fatalf("no call on %s within two minutes", path)
	return time.Time{}
}

// redisCommands is the number of commands the Redis server has run (INFO stats), summed over the
// masters of a Cluster.
func redisCommands(b *testing.B, rdb redis.UniversalClient) int64 {
	return int64(redistest.InfoSum(b, rdb, "stats", "total_commands_processed"))
}

func benchEnvInt(name string, def int) int {
	v, _ := strconv.Atoi(os.Getenv(name))
	return cmp.Or(v, def)
}

func benchEnvDuration(name string, def time.Duration) time.Duration {
	v, _ := time.ParseDuration(os.Getenv(name))
	return cmp.Or(v, def)
}
