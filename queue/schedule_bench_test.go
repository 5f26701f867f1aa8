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
// comparison; SLUICE_SCHEDULE_LOOKAHEAD_MS sets it. SLUICE_SCHEDULE_SERVERS=1 runs the three
// schedulers as three `sluice server` processes of this checkout instead (their defaults, so the
// lookahead knobs do not apply); the fires' lateness is then read from their
// sluice_schedule_lateness_seconds histograms (the bound of the bucket that holds the p99). In
// both, the due lateness of the consumed queue's jobs (how long after its tick each was
// published, 0 for one published ahead) is measured from the jobs themselves.
// Run it alone, once: -run '^$' -bench Schedulers10k -benchtime 1x.
func BenchmarkSchedulers10kEverySecond(b *testing.B) {
	n := benchKnob("SLUICE_SCHEDULES", 10000)
	secs := benchKnob("SLUICE_SCHEDULE_SECONDS", 60)
	servers := os.Getenv("SLUICE_SCHEDULE_SERVERS") == "1"
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
	lead := 10 * time.Second
	if servers {
		lead = 30 * time.Second // the servers start after the schedules are set
	}
	start := time.Now().Add(lead).Truncate(time.Second)
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
	var procs *schedServers
	if servers {
		procs = startSchedServers(b, env, 3)
	}
	if time.Now().After(start) {
		b.Fatalf("setting %d schedules and starting the schedulers took past their first tick %s", n, start)
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
	schedulerCPU := func() time.Duration {
		if servers {
			return procs.cpu(b)
		}
		return cpustat.Self() // the schedulers, and the consumer of one queue
	}
	goCPU0 := schedulerCPU()
	runCtx, stopConsumer := context.WithCancel(ctx)
	seen := make(chan consumedTicks, 1)
	go func() { seen <- consumeTicks(runCtx, clients[1], "bench", "q0") }()
	b.ResetTimer()
	schedulers := make([]*queue.Scheduler, len(clients))
	for i, c := range clients {
		if servers {
			break
		}
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
	time.Sleep(time.Until(start) + time.Duration(secs)*time.Second) // the load runs for a fixed time: that is the benchmark
	var bounds []float64
	var buckets map[float64]float64
	for _, s := range schedulers {
		if s != nil {
			s.Stop()
		}
	}
	goCPU1 := schedulerCPU()
	if servers {
		if bounds, buckets, err = procs.latenessBuckets(ctx); err != nil {
			b.Fatal(err)
		}
		procs.stop()
	}
	stopped := time.Now()
	stopConsumer()
	got := <-seen
	b.StopTimer()
	cpu1, err := cpustat.Redis(ctx, env.Client)
	if err != nil {
		b.Fatal(err)
	}
	var dups, missing, missed, total int64
	for i := range n {
		s, err := clients[0].Schedules().Get(ctx, "bench", "s"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		want := int64(0)
		if !s.LastRun.IsZero() {
			want = int64(s.LastRun.Sub(first[i])/time.Second) + 1
		}
		total += s.Fires
		dups += max(0, s.Fires-want)
		missing += max(0, want-s.Fires)
		missed += s.Missed
	}
	if servers {
		fired = total
	}
	q, cq, dq := quantiles(lateness), quantiles(got.received), quantiles(got.due)
	perFire, goPerFire := time.Duration(0), time.Duration(0)
	if fired > 0 {
		perFire = (cpu1 - cpu0) / time.Duration(fired)
		goPerFire = (goCPU1 - goCPU0) / time.Duration(fired)
	}
	where := "3 schedulers in one process"
	fireLateness := fmt.Sprintf("p50 %s, p99 %s, max %s", q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond),
		q(1).Round(time.Millisecond))
	if servers {
		where = "3 sluice server processes"
		p99 := histogramQuantile(bounds, buckets, 0.99)
		fireLateness = fmt.Sprintf("p50 <= %.3gs, p99 <= %.3gs (histogram buckets)", histogramQuantile(bounds, buckets, 0.5), p99)
		b.ReportMetric(p99*1000, "p99-lateness-bucket-ms")
	} else {
		b.ReportMetric(float64(q(0.99).Microseconds())/1000, "p99-lateness-ms")
	}
	b.ReportMetric(float64(fired)/stopped.Sub(start).Seconds(), "fires/s")
	b.ReportMetric(float64(dq(0.99).Microseconds())/1000, "p99-due-lateness-q0-ms")
	b.ReportMetric(float64(cq(0.99).Microseconds())/1000, "p99-consumer-lateness-ms")
	b.ReportMetric(float64(dups), "duplicates")
	b.ReportMetric(float64(missing+missed), "missed")
	b.ReportMetric(float64(perFire.Microseconds()), "redis-cpu-µs/fire")
	b.ReportMetric(float64(goPerFire.Microseconds()), "scheduler-cpu-µs/fire")
	fmt.Printf("%d schedules every second on %s for %ds: %d fires; lateness %s; "+
		"%d duplicates, %d missing, %d counted missed; CPU per fire: Redis %s, schedulers %s; a consumer of q0 got %d jobs, "+
		"due lateness p50 %s, p99 %s, max %s; received after the tick p50 %s, p99 %s, max %s\n", n, where, secs, fired,
		fireLateness, dups, missing, missed, perFire, goPerFire, len(got.received),
		dq(0.5).Round(time.Millisecond), dq(0.99).Round(time.Millisecond), dq(1).Round(time.Millisecond),
		cq(0.5).Round(time.Millisecond), cq(0.99).Round(time.Millisecond), cq(1).Round(time.Millisecond))
}

// consumedTicks is what a consumer of one queue saw of its ticks' jobs: how long after its tick
// each was received, and how long after its tick each was published (0 when published ahead,
// due at its tick).
type consumedTicks struct {
	received, due []time.Duration
}

// consumeTicks consumes queue q of namespace ns until ctx ends and returns how late after its tick
// each job was received and published. Its leases outlast the run, so no job comes twice.
func consumeTicks(ctx context.Context, c *queue.Client, ns, q string) consumedTicks {
	var out consumedTicks
	for ctx.Err() == nil {
		ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: ns, Queues: []string{q}, Count: 1000, TTR: time.Hour,
			Timeout: time.Second})
		got := time.Now()
		if err != nil {
			continue
		}
		for _, d := range ds {
			if tick, err := time.Parse(time.RFC3339Nano, d.Attributes[queue.AttrScheduleTick]); err == nil {
				out.received = append(out.received, max(got.Sub(tick), 0))
				out.due = append(out.due, max(d.PublishedAt.Sub(tick), 0))
			}
		}
	}
	return out
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
