package relay_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
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

	b.ResetTimer()
	start := time.Now()
	cpu0, redis0 := cpustat.Self(), cpustat.MustRedis(b, env.Client)
	submitFrom64(b, c, "bench")
	waitCompleted(b, c, "bench")
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64((cpustat.Self()-cpu0).Microseconds())/float64(b.N), "process-cpu-µs/task")
	b.ReportMetric(float64((cpustat.MustRedis(b, env.Client)-redis0).Microseconds())/float64(b.N), "redis-cpu-µs/task")
	if got := tg.calls.Load(); got != int64(b.N) {
		b.Fatalf("target got %d calls for %d tasks", got, b.N)
	}
}

// BenchmarkRateBoundEndToEnd measures a backlog of offline tasks drained through an endpoint
// whose QPS (2,000) binds, to a local no-op target: the rate achieved and Redis's CPU per task,
// which includes the rate limit's start log (a token checked and logged per task). Run with
// -benchtime 20000x.
func BenchmarkRateBoundEndToEnd(b *testing.B) {
	env := redistest.New(b)
	c := newClient(b, env, relay.Config{})
	tg := newTarget(b, func(w http.ResponseWriter, r *http.Request, n int64) {})
	setEndpoint(b, c, relay.Endpoint{Name: "bench", TargetURL: tg.URL, Concurrency: 100_000, QPS: 2000, MaxQueued: 10_000_000})
	submitFrom64(b, c, "bench")
	b.ResetTimer()
	start := time.Now()
	redis0 := cpustat.MustRedis(b, env.Client)
	startDispatcherB(b, c, relay.DispatcherConfig{Workers: 256, Batch: 256})
	waitCompleted(b, c, "bench")
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	b.ReportMetric(float64((cpustat.MustRedis(b, env.Client)-redis0).Microseconds())/float64(b.N), "redis-cpu-µs/task")
}

// BenchmarkQPSAccuracy runs an endpoint at QPS 50 and at QPS 200 for 20 s each (b.N ignored;
// run with -benchtime 1x) with a backlog, two dispatchers in two processes (as two instances) and
// the target in a third, calls of 20 ms. The target records each call twice: when it reached the
// target's socket (the kernel's receive time) and when its handler had read it (which adds the
// target process's own scheduling). Reported: the mean calls per second and the slowest whole
// second (on receive times), the busiest sliding one-second window of each, the target's longest
// delay between the two, and the late calls the dispatchers reported.
func BenchmarkQPSAccuracy(b *testing.B) {
	for _, qps := range []int{50, 200} {
		b.Run(fmt.Sprintf("qps%d", qps), func(b *testing.B) { benchQPS(b, qps, 20) })
	}
}

func benchQPS(b *testing.B, qps, seconds int) {
	env := redistest.New(b)
	c := newClient(b, env, relay.Config{})
	tg, url := startBenchProc(b, "target")
	setEndpoint(b, c, relay.Endpoint{Name: "qps", TargetURL: url, QPS: float64(qps), Concurrency: 8, MaxQueued: 1_000_000})
	ctx := context.Background()
	for range qps*seconds + qps {
		if _, err := c.Submit(ctx, relay.SubmitParams{Endpoint: "qps"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var ds []*benchProc
	for range 2 {
		d, _ := startBenchProc(b, "dispatcher", benchRedisEnv+"="+env.URL, benchPrefixEnv+"="+env.Prefix)
		ds = append(ds, d)
	}
	time.Sleep(time.Duration(seconds)*time.Second + time.Second) // the dispatchers run for the time measured
	b.StopTimer()
	var late int64
	for _, d := range ds {
		var st relay.DispatcherStats
		d.finish(b, &st)
		late += st.Late
	}
	var seen []benchArrival
	tg.finish(b, &seen)
	received, handled := make([]time.Time, len(seen)), make([]time.Time, len(seen))
	var delay time.Duration
	for i, a := range seen {
		received[i], handled[i] = time.Unix(0, a.Received), time.Unix(0, a.Handled)
		delay = max(delay, handled[i].Sub(received[i]))
	}
	sort.Slice(seen, func(i, j int) bool { return seen[i].Handled < seen[j].Handled })
	sortTimes(received)
	sortTimes(handled)
	// Skip the first second (start-up), then count whole seconds.
	first := received[0]
	var perSec []int
	for s := 1; s <= seconds-1; s++ {
		lo, hi := first.Add(time.Duration(s)*time.Second), first.Add(time.Duration(s+1)*time.Second)
		n := 0
		for _, t := range received {
			if !t.Before(lo) && t.Before(hi) {
				n++
			}
		}
		perSec = append(perSec, n)
	}
	minS, sum := perSec[0], 0
	for _, n := range perSec {
		minS, sum = min(minS, n), sum+n
	}
	busiest, _, _ := busiestSecond(received)
	busiestHandled, from, to := busiestSecond(handled)
	if testing.Verbose() && busiestHandled > qps {
		// What the target did around the ends of its busiest second: the gaps between handled
		// calls, and each call's delay in the target (from its socket to its handler).
		around := func(k int) (gaps, delays []string) {
			for i := max(k-5, 1); i < min(k+6, len(seen)); i++ {
				gaps = append(gaps, handled[i].Sub(handled[i-1]).Round(100*time.Microsecond).String())
				delays = append(delays, time.Duration(seen[i].Handled-seen[i].Received).Round(100*time.Microsecond).String())
			}
			return gaps, delays
		}
		g, d := around(from)
		b.Logf("busiest handled second %d..%d starts: gaps %v, delays in the target %v", from, to, g, d)
		g, d = around(to)
		b.Logf("and ends: gaps %v, delays in the target %v", g, d)
	}
	b.ReportMetric(float64(sum)/float64(len(perSec)), "calls/s")
	b.ReportMetric(float64(minS), "min-calls/s")
	b.ReportMetric(float64(busiest), "busiest-1s-received")
	b.ReportMetric(float64(busiestHandled), "busiest-1s-handled")
	b.ReportMetric(float64(delay.Milliseconds()), "max-target-delay-ms")
	b.ReportMetric(float64(late), "late-calls")
}

func sortTimes(ts []time.Time) { sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) }) }

// busiestSecond returns the most of the (sorted) times that fall in one sliding second [t, t+1s),
// and the indexes of the first and last of them.
func busiestSecond(ts []time.Time) (n, from, to int) {
	j := 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= time.Second {
			j++
		}
		if i-j+1 > n {
			n, from, to = i-j+1, j, i
		}
	}
	return n, from, to
}

// BenchmarkETAAccuracy compares the wait each task was predicted at submit (Get right after
// Submit) with when it actually started, and reports the median and p90 of |predicted - actual| /
// actual, in two regimes (b.N ignored; run with -benchtime 1x):
//   - concurrency: the slots bind. Concurrency 4, calls of 20 ms, a backlog of 1,500 draining at
//     about 200 tasks/s; a task submitted every 50 ms waits 3-6 s.
//   - qps: the rate limit binds. QPS 10 (100.8 ms apart with the dispatcher's margin),
//     concurrency 100, calls of 20 ms; a task submitted every 80 ms from an idle endpoint, so
//     the queue grows slowly and waits are short (0.1-1.5 s), where one interval is a large
//     share of the wait.
func BenchmarkETAAccuracy(b *testing.B) {
	b.Run("concurrency", func(b *testing.B) {
		benchETA(b, relay.Endpoint{Concurrency: 4, AvgDuration: 20 * time.Millisecond}, 1500, 50*time.Millisecond)
	})
	b.Run("qps", func(b *testing.B) {
		benchETA(b, relay.Endpoint{Concurrency: 100, QPS: 10}, 0, 80*time.Millisecond)
	})
}

// benchETA puts backlog tasks on endpoint e (calls of 20 ms), starts a dispatcher, then submits
// a task every every, 60 in all, and reports the ETA errors of those that waited 100 ms or more.
func benchETA(b *testing.B, e relay.Endpoint, backlog int, every time.Duration) {
	env := redistest.New(b)
	c := newClient(b, env, relay.Config{})
	tg := newTarget(b, func(w http.ResponseWriter, r *http.Request, n int64) { time.Sleep(20 * time.Millisecond) })
	e.Name, e.TargetURL, e.MaxQueued = "eta", tg.URL, 1_000_000
	setEndpoint(b, c, e)
	ctx := context.Background()
	for range backlog {
		if _, err := c.Submit(ctx, relay.SubmitParams{Endpoint: "eta"}); err != nil {
			b.Fatal(err)
		}
	}
	startDispatcherB(b, c, relay.DispatcherConfig{Workers: 8})
	if backlog > 0 {
		time.Sleep(2 * time.Second) // the completion rate gets measured
	}
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
		time.Sleep(every) // the pace of the samples: one submit every interval
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

// submitFrom64 submits b.N small offline tasks to endpoint from 64 goroutines.
func submitFrom64(b *testing.B, c *relay.Client, endpoint string) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if _, err := c.Submit(context.Background(), relay.SubmitParams{Endpoint: endpoint, Body: []byte("x")}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// waitCompleted returns once endpoint counts b.N tasks completed.
func waitCompleted(b *testing.B, c *relay.Client, endpoint string) {
	b.Helper()
	testwait.Until(b, 5*time.Minute, fmt.Sprintf("%d tasks completed", b.N), func() bool {
		st, err := c.Stats(context.Background(), endpoint)
		if err != nil {
			b.Fatal(err)
		}
		return st.Totals[relay.StatusCompleted] >= int64(b.N)
	})
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
