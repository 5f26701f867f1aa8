package relay_test

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

// BenchmarkOfflineEndToEnd measures offline tasks per second through the whole path: Submit
// (from 64 goroutines), dispatch, the HTTP call to a local no-op target, and the stored result,
// with limits high enough not to bind.
func BenchmarkOfflineEndToEnd(b *testing.B) {
	env := redistest.New(b)
	c := newClient(b, env, relay.Config{})
	tg := newTarget(b, func(w http.ResponseWriter, r *http.Request, n int64) {})
	setEndpoint(b, c, relay.Endpoint{Name: "bench", TargetURL: tg.URL, Concurrency: 100_000, MaxQueued: 10_000_000})
	startDispatcherB(b, c, relay.DispatcherConfig{Workers: 256, Batch: 256})

	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	cpu0, redis0 := cpustat.Self(), cpustat.MustRedis(b, env.Client)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if _, err := c.Submit(ctx, relay.SubmitParams{Endpoint: "bench", Body: []byte("x")}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for {
		st, err := c.Stats(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if st.Totals[relay.StatusCompleted] >= int64(b.N) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64((cpustat.Self()-cpu0).Microseconds())/float64(b.N), "process-cpu-µs/task")
	b.ReportMetric(float64((cpustat.MustRedis(b, env.Client)-redis0).Microseconds())/float64(b.N), "redis-cpu-µs/task")
	if got := tg.calls.Load(); got != int64(b.N) {
		b.Fatalf("target got %d calls for %d tasks", got, b.N)
	}
}

// BenchmarkQPSAccuracy runs an endpoint at QPS 200 for 20 s (with b.N ignored) and reports the
// calls per second measured at the target, the busiest sliding one-second window and the
// concurrency peak. Run with -benchtime 1x.
func BenchmarkQPSAccuracy(b *testing.B) {
	const qps, seconds = 200, 20
	env := redistest.New(b)
	a := newClient(b, env, relay.Config{})
	other := newClient(b, env, relay.Config{})
	tg := newTarget(b, func(w http.ResponseWriter, r *http.Request, n int64) { time.Sleep(20 * time.Millisecond) })
	setEndpoint(b, a, relay.Endpoint{Name: "qps", TargetURL: tg.URL, QPS: qps, Concurrency: 8, MaxQueued: 1_000_000})
	ctx := context.Background()
	for range qps*seconds + qps {
		if _, err := a.Submit(ctx, relay.SubmitParams{Endpoint: "qps"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	// Two dispatchers in two Clients share the limit.
	da := startDispatcherB(b, a, relay.DispatcherConfig{Workers: 16})
	db := startDispatcherB(b, other, relay.DispatcherConfig{Workers: 16})
	time.Sleep(seconds*time.Second + time.Second)
	b.StopTimer()
	arrivals, _ := tg.snapshot()
	sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
	// Skip the first second (start-up), then count seconds [1, seconds].
	first := arrivals[0]
	var perSec []int
	for s := 1; s <= seconds-1; s++ {
		lo, hi := first.Add(time.Duration(s)*time.Second), first.Add(time.Duration(s+1)*time.Second)
		n := 0
		for _, t := range arrivals {
			if !t.Before(lo) && t.Before(hi) {
				n++
			}
		}
		perSec = append(perSec, n)
	}
	minS, maxS, sum := perSec[0], perSec[0], 0
	for _, n := range perSec {
		minS, maxS, sum = min(minS, n), max(maxS, n), sum+n
	}
	// The busiest window of one second anywhere (sliding over every arrival).
	busiest, bi, bj := 0, 0, 0
	j := 0
	for i := range arrivals {
		for arrivals[i].Sub(arrivals[j]) >= time.Second {
			j++
		}
		if i-j+1 > busiest {
			busiest, bi, bj = i-j+1, i, j
		}
	}
	if testing.Verbose() && busiest > qps {
		gaps := func(from, to int) (out []string) {
			for k := max(from, 1); k < min(to, len(arrivals)); k++ {
				out = append(out, arrivals[k].Sub(arrivals[k-1]).Round(100*time.Microsecond).String())
			}
			return out
		}
		b.Logf("busiest window %d..%d: gaps at its start %v, at its end %v", bj, bi, gaps(bj-5, bj+6), gaps(bi-5, bi+6))
	}
	b.ReportMetric(float64(sum)/float64(len(perSec)), "calls/s")
	b.ReportMetric(float64(minS), "min-calls/s")
	b.ReportMetric(float64(maxS), "max-calls/s")
	b.ReportMetric(float64(busiest), "busiest-1s-window")
	b.ReportMetric(float64(tg.peak.Load()), "peak-concurrency")
	b.ReportMetric(float64(da.Stats().Late+db.Stats().Late), "late-calls")
}

// BenchmarkETAAccuracy puts a backlog on an endpoint (concurrency 4, calls of 20 ms) and, while
// it drains at a steady rate, submits a task every 50 ms; it compares each one's predicted wait
// (Get right after Submit) with when it actually started, and reports the median and p90 of
// |predicted - actual| / actual. Run with -benchtime 1x.
func BenchmarkETAAccuracy(b *testing.B) {
	env := redistest.New(b)
	c := newClient(b, env, relay.Config{})
	tg := newTarget(b, func(w http.ResponseWriter, r *http.Request, n int64) { time.Sleep(20 * time.Millisecond) })
	setEndpoint(b, c, relay.Endpoint{Name: "eta", TargetURL: tg.URL, Concurrency: 4, AvgDuration: 20 * time.Millisecond, MaxQueued: 1_000_000})
	ctx := context.Background()
	for range 1500 {
		if _, err := c.Submit(ctx, relay.SubmitParams{Endpoint: "eta"}); err != nil {
			b.Fatal(err)
		}
	}
	startDispatcherB(b, c, relay.DispatcherConfig{Workers: 8})
	time.Sleep(2 * time.Second) // the completion rate gets measured
	b.ResetTimer()
	type sample struct {
		id        string
		submitted time.Time
		ahead     int64
		predicted time.Duration
	}
	var samples []sample
	for range 60 {
		r, err := c.Submit(ctx, relay.SubmitParams{Endpoint: "eta"})
		if err != nil {
			b.Fatal(err)
		}
		task, err := c.Get(ctx, r.ID)
		if err != nil {
			b.Fatal(err)
		}
		if task.WaitKnown {
			samples = append(samples, sample{r.ID, r.CreatedAt, task.WaitNum, task.WaitTime})
		}
		time.Sleep(50 * time.Millisecond)
	}
	var errs []float64
	for _, s := range samples {
		task := waitFinal(b, c, s.id)
		actual := task.StartedAt.Sub(s.submitted)
		if actual < 100*time.Millisecond {
			continue // no real wait to predict
		}
		d := (s.predicted - actual).Seconds()
		if d < 0 {
			d = -d
		}
		errs = append(errs, d/actual.Seconds())
		if testing.Verbose() {
			b.Logf("ahead %d predicted %s actual %s", s.ahead, s.predicted.Round(time.Millisecond), actual.Round(time.Millisecond))
		}
	}
	b.StopTimer()
	if len(errs) == 0 {
		b.Fatal("no samples with a wait")
	}
	sort.Float64s(errs)
	b.ReportMetric(errs[len(errs)/2]*100, "median-err-%")
	b.ReportMetric(errs[len(errs)*9/10]*100, "p90-err-%")
	b.ReportMetric(float64(len(errs)), "samples")
}

func startDispatcherB(b *testing.B, c *relay.Client, cfg relay.DispatcherConfig) *relay.Dispatcher {
	b.Helper()
	cfg.AllowPrivate = true // httptest targets are on loopback
	d, err := relay.NewDispatcher(c, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Stop)
	return d
}
