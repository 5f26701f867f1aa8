package queue_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// benchKnob reads a positive integer setting of a benchmark from the environment.
func benchKnob(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkSchedulers10kEverySecond runs SLUICE_SCHEDULES (10,000) schedules firing every second,
// 100 to a queue, on three Schedulers (each with its own client and connections, as three
// processes would have) for SLUICE_SCHEDULE_SECONDS (60). Every schedule ticks on the same
// whole seconds, the worst case. It reports the lateness of the fires (how long after its tick
// each job was due, by Redis's clock: p50, p99 and max), the lateness a consumer of one of the
// queues saw (when it got each job, after its tick), the duplicates and missing ticks found by
// comparing each schedule's fires with the ticks between its first tick and its last run, the
// ticks counted missed, and Redis's CPU time per fire. SLUICE_SCHEDULE_NO_LOOKAHEAD=1 turns the
// schedulers' lookahead off (every job published at its tick or after), for a side-by-side
// comparison; SLUICE_SCHEDULE_LOOKAHEAD_MS sets it. Run it alone, once: -run '^$' -bench Schedulers10k -benchtime 1x.
func BenchmarkSchedulers10kEverySecond(b *testing.B) {
	n := benchKnob("SLUICE_SCHEDULES", 10000)
	secs := benchKnob("SLUICE_SCHEDULE_SECONDS", 60)
	env := redistest.New(b)
	ctx := context.Background()
	clients := make([]*queue.Client, 3)
	for i := range clients {
		rdb, err := redisx.NewClient(env.URL)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = rdb.Close() })
		c, err := queue.NewClient(rdb, queue.Config{Prefix: env.Prefix})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	// Every schedule's first tick is the same whole second, after all are set: ticks already due
	// when the schedulers start would be a catch-up, not lateness.
	start := time.Now().Add(10 * time.Second).Truncate(time.Second)
	first := make([]time.Time, n)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				s, err := clients[0].Schedules().Set(ctx, queue.ScheduleParams{Namespace: "bench", Name: "s" + strconv.Itoa(i),
					Every: time.Second, CatchUp: queue.CatchUpAll, StartAt: start,
					Job: queue.JobTemplate{Queue: "q" + strconv.Itoa(i%100), Payload: []byte(`{}`)}})
				if err != nil {
					b.Error(err)
					return
				}
				first[i] = s.NextRun
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	if time.Now().After(start) {
		b.Fatalf("setting %d schedules took past their first tick %s", n, start)
	}
	var mu sync.Mutex
	var lateness []time.Duration
	var fired int64
	onFire := func(ev queue.FireEvent) {
		mu.Lock()
		defer mu.Unlock()
		fired += int64(ev.Jobs)
		if ev.Jobs > 0 {
			lateness = append(lateness, ev.Lateness)
		}
	}
	cpu0, err := cpustat.Redis(ctx, env.Client)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stopConsumer := context.WithCancel(ctx)
	seen := make(chan []time.Duration, 1)
	go func() { seen <- consumeTicks(runCtx, clients[1], "bench", "q0") }()
	b.ResetTimer()
	schedulers := make([]*queue.Scheduler, len(clients))
	for i, c := range clients {
		cfg := queue.SchedulerConfig{OnFire: onFire}
		if os.Getenv("SLUICE_SCHEDULE_NO_LOOKAHEAD") == "1" {
			cfg.Lookahead = -1
		} else if ms := benchKnob("SLUICE_SCHEDULE_LOOKAHEAD_MS", 0); ms > 0 {
			cfg.Lookahead = time.Duration(ms) * time.Millisecond
		}
		schedulers[i] = queue.NewScheduler(c, cfg)
		if err := schedulers[i].Start(ctx); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(time.Duration(secs) * time.Second) // the load runs for a fixed time: that is the benchmark
	for _, s := range schedulers {
		s.Stop()
	}
	stopped := time.Now()
	stopConsumer()
	consumed := <-seen
	b.StopTimer()
	cpu1, err := cpustat.Redis(ctx, env.Client)
	if err != nil {
		b.Fatal(err)
	}
	var dups, missing, missed int64
	for i := range n {
		s, err := clients[0].Schedules().Get(ctx, "bench", "s"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		want := int64(0)
		if !s.LastRun.IsZero() {
			want = int64(s.LastRun.Sub(first[i])/time.Second) + 1
		}
		dups += max(0, s.Fires-want)
		missing += max(0, want-s.Fires)
		missed += s.Missed
	}
	q, cq := quantiles(lateness), quantiles(consumed)
	perFire := time.Duration(0)
	if fired > 0 {
		perFire = (cpu1 - cpu0) / time.Duration(fired)
	}
	b.ReportMetric(float64(fired)/stopped.Sub(start).Seconds(), "fires/s")
	b.ReportMetric(float64(q(0.99).Microseconds())/1000, "p99-lateness-ms")
	b.ReportMetric(float64(cq(0.99).Microseconds())/1000, "p99-consumer-lateness-ms")
	b.ReportMetric(float64(dups), "duplicates")
	b.ReportMetric(float64(missing+missed), "missed")
	b.ReportMetric(float64(perFire.Microseconds()), "redis-cpu-µs/fire")
	fmt.Printf("%d schedules every second on 3 schedulers for %ds: %d fires; lateness p50 %s, p99 %s, max %s; "+
		"%d duplicates, %d missing, %d counted missed; Redis CPU %s per fire; a consumer of q0 got %d jobs, "+
		"lateness p50 %s, p99 %s, max %s\n", n, secs, fired,
		q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), q(1).Round(time.Millisecond),
		dups, missing, missed, perFire, len(consumed),
		cq(0.5).Round(time.Millisecond), cq(0.99).Round(time.Millisecond), cq(1).Round(time.Millisecond))
}

// consumeTicks consumes queue q of namespace ns until ctx ends and returns how long after its tick
// each job was received. Its leases outlast the run, so no job comes twice.
func consumeTicks(ctx context.Context, c *queue.Client, ns, q string) []time.Duration {
	var late []time.Duration
	for ctx.Err() == nil {
		ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: ns, Queues: []string{q}, Count: 1000, TTR: time.Hour,
			Timeout: time.Second})
		got := time.Now()
		if err != nil {
			continue
		}
		for _, d := range ds {
			if tick, err := time.Parse(time.RFC3339Nano, d.Attributes[queue.AttrScheduleTick]); err == nil {
				late = append(late, max(got.Sub(tick), 0))
			}
		}
	}
	return late
}

// quantiles sorts ds and returns a function giving its p-quantile (0 when ds is empty).
func quantiles(ds []time.Duration) func(p float64) time.Duration {
	slices.Sort(ds)
	return func(p float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		return ds[int(p*float64(len(ds)-1))]
	}
}
