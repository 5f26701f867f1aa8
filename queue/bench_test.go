package queue_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// Benchmarks of the engine through the Go client against a real redis-server on loopback.
// Figures and the machine are in docs/benchmarks.md. Run: make bench BENCH=. (or go test -bench).

var payload100 = []byte(strings.Repeat("x", 100))

func benchClient(b *testing.B) (*queue.Client, *redistest.Env) {
	b.Helper()
	env := redistest.New(b)
	c, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c, env
}

func publishBatch(n int) []queue.PublishParams {
	ps := make([]queue.PublishParams, n)
	for i := range ps {
		ps[i] = queue.PublishParams{Namespace: "bench", Queue: "q", Payload: payload100}
	}
	return ps
}

// BenchmarkPublish is one Publish per job, from 16 goroutines.
func BenchmarkPublish(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "bench", Queue: "q", Payload: payload100}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkPublishOneGoroutine is one Publish at a time from one goroutine (a web handler that
// schedules one job): nothing to merge, so it measures what one call costs.
func BenchmarkPublishOneGoroutine(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "bench", Queue: "q", Payload: payload100}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkPublishBatch is PublishMany with 100 jobs per call, from 4 goroutines.
func BenchmarkPublishBatch(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	const batch = 100
	ps := publishBatch(batch)
	var jobs sync.Map
	b.SetParallelism(2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			if _, err := c.PublishMany(ctx, ps); err != nil {
				b.Error(err)
				return
			}
			n += batch
		}
		jobs.Store(&n, n)
	})
	b.ReportMetric(sumJobs(&jobs)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkConsumeAck is one Consume and one Ack per job, from 16 goroutines.
func BenchmarkConsumeAck(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	fill(b, c, b.N+1000)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "bench", Queues: []string{"q"}})
			if err != nil || len(ds) != 1 {
				b.Errorf("consume: %d jobs, %v", len(ds), err)
				return
			}
			if err := c.Ack(ctx, queue.AckParams{Namespace: "bench", Queue: "q", ID: ds[0].ID, Delivery: ds[0].Delivery}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkPublishConsumeAckBatched is the full cycle in batches of 100 (PublishMany, Consume with
// Count 100, AckMany) from 4 goroutines: each b.N is one job through its whole life.
func BenchmarkPublishConsumeAckBatched(b *testing.B) {
	c, _ := benchClient(b)
	benchCycleOverQueues(b, c, 1, 4)
}

// The server's shapes, one call at a time. Under concurrent HTTP load the server's combiner sends
// Redis about 8 publishes (jobs with a ttl, as sluice bench sends them) or 4 consumes or 4 acks per
// script call. These two benchmarks send exactly that from one goroutine, so what Redis spends per
// job can be counted (callgrind on redis-server, SLUICE_TEST_REDIS_URL, two -benchtime Nx runs; see
// docs/benchmarks.md). ConsumeAckInFours publishes its jobs the way PublishInEights does, so its
// count less PublishInEights' is the consume + ack.

// BenchmarkPublishInEights is PublishMany of 8 jobs with a ttl per call.
func BenchmarkPublishInEights(b *testing.B) {
	c, _ := benchClient(b)
	publishInEights(b, c, b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkConsumeAckInFours publishes b.N jobs as PublishInEights does, then consumes them 4 per
// Consume and acks each 4 with one AckMany; it times the consumes and acks.
func BenchmarkConsumeAckInFours(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	publishInEights(b, c, b.N)
	b.ResetTimer()
	for done := 0; done < b.N; {
		ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "bench", Queues: []string{"q"}, Count: min(4, b.N-done)})
		if err != nil || len(ds) == 0 {
			b.Fatalf("consume: %d jobs, %v", len(ds), err)
		}
		acks := make([]queue.AckParams, len(ds))
		for i, d := range ds {
			acks[i] = queue.AckParams{Namespace: "bench", Queue: "q", ID: d.ID, Delivery: d.Delivery}
		}
		errs, err := c.AckMany(ctx, acks)
		if err != nil || errors.Join(errs...) != nil {
			b.Fatalf("ack: %v, %v", errs, err)
		}
		done += len(ds)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

func publishInEights(b *testing.B, c *queue.Client, n int) {
	b.Helper()
	ps := make([]queue.PublishParams, 8)
	for i := range ps {
		ps[i] = queue.PublishParams{Namespace: "bench", Queue: "q", Payload: payload100, TTL: 10 * time.Minute}
	}
	for done := 0; done < n; done += len(ps) {
		if _, err := c.PublishMany(context.Background(), ps[:min(len(ps), n-done)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdlePickup measures, for a consumer blocked on an empty queue, the time from the start
// of a Publish to the consumer holding the job.
func BenchmarkIdlePickup(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	got := make(chan time.Time)
	ready := make(chan struct{})
	go func() {
		for range b.N {
			ready <- struct{}{}
			ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "bench", Queues: []string{"idle"}, Timeout: 10 * time.Second})
			if err != nil || len(ds) != 1 {
				b.Errorf("consume: %v %d", err, len(ds))
			}
			got <- time.Now()
		}
	}()
	for range b.N {
		<-ready
		// A pause for the consumer to block, not a wait for a condition nothing shows (its
		// subscription outlives each consume): a consumer not yet blocked finds the job at once,
		// which the latency measured still counts.
		time.Sleep(2 * time.Millisecond)
		start := time.Now()
		if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "bench", Queue: "idle", Payload: payload100}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	reportPercentiles(b, lat)
}

// BenchmarkDelayLateness publishes jobs due 20..120 ms later and measures how late a blocked
// consumer gets each one: p50, p99 and max of the signed lateness by the local clock, from the
// local due time (publish latency counts against us; an early start is negative, not clamped).
// It also counts the early starts and reports the worst one, by the local clock (early-local,
// worst-early-local-ms) and by Redis's clock (early, worst-early-ms): the delivery's Elapsed, from
// publish to lease as the scripts read Redis TIME, against the delay asked for. A job leased
// before it is due by Redis's clock breaks the engine's guarantee and fails the benchmark.
func BenchmarkDelayLateness(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	late := make([]time.Duration, 0, b.N)
	var early, earlyLocal int
	var worst, worstLocal time.Duration
	for i := range b.N {
		delay := time.Duration(20+i%100) * time.Millisecond
		start := time.Now()
		res, err := c.Publish(ctx, queue.PublishParams{Namespace: "bench", Queue: "delay", Payload: payload100, Delay: delay, TTR: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "bench", Queues: []string{"delay"}, Timeout: 10 * time.Second})
		if err != nil || len(ds) != 1 || ds[0].ID != res.ID {
			b.Fatalf("consume: %v %d", err, len(ds))
		}
		l := time.Since(start.Add(delay))
		late = append(late, l)
		if l < 0 {
			earlyLocal++
			worstLocal = max(worstLocal, -l)
		}
		if e := delay - ds[0].Elapsed; e > 0 {
			early++
			worst = max(worst, e)
		}
		if err := c.Ack(ctx, queue.AckParams{Namespace: "bench", Queue: "delay", ID: ds[0].ID, Delivery: ds[0].Delivery}); err != nil {
			b.Fatal(err)
		}
	}
	reportPercentiles(b, late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(float64(early), "early")
	b.ReportMetric(ms(worst), "worst-early-ms")
	b.ReportMetric(float64(earlyLocal), "early-local")
	b.ReportMetric(ms(worstLocal), "worst-early-local-ms")
	if early > 0 {
		b.Errorf("%d of %d jobs were leased before they were due by Redis's clock (worst %s early)", early, b.N, worst)
	}
}

// BenchmarkMemoryPerQueuedJob fills a queue with 100k ready jobs of 100-byte payloads and reports
// the growth of Redis's used_memory per job: plain jobs, and jobs with a ttl (lmstfy's default of
// one day), which also sit in the expiry index.
func BenchmarkMemoryPerQueuedJob(b *testing.B) {
	for _, tc := range []struct {
		name string
		ttl  time.Duration
	}{{"no-ttl", 0}, {"ttl", 24 * time.Hour}} {
		b.Run(tc.name, func(b *testing.B) {
			c, env := benchClient(b)
			ctx := context.Background()
			const jobs = 100_000
			before := usedMemory(b, env)
			ps := publishBatch(1000)
			for i := range ps {
				ps[i].TTL = tc.ttl
				ps[i].Queue = "mem-" + tc.name
			}
			for range b.N {
				for range jobs / len(ps) {
					if _, err := c.PublishMany(ctx, ps); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				after := usedMemory(b, env)
				b.ReportMetric(float64(after-before)/jobs, "bytes/job")
				if _, err := c.Purge(ctx, "bench", ps[0].Queue); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

func fill(b *testing.B, c *queue.Client, n int) {
	b.Helper()
	ps := publishBatch(1000)
	for i := 0; i < n; i += len(ps) {
		if _, err := c.PublishMany(context.Background(), ps); err != nil {
			b.Fatal(err)
		}
	}
}

// usedMemory is Redis's used_memory once no UNLINKed value is still waiting to be freed.
func usedMemory(b *testing.B, env *redistest.Env) int64 {
	b.Helper()
	var used int64
	testwait.Until(b, time.Minute, "every UNLINKed value freed", func() bool {
		info, err := env.Client.Info(context.Background(), "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		fields := map[string]int64{}
		for _, line := range strings.Split(info, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k], _ = strconv.ParseInt(v, 10, 64)
			}
		}
		used = fields["used_memory"]
		return fields["lazyfree_pending_objects"] == 0
	})
	return used
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	b.Helper()
	slices.Sort(d)
	p := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(float64(d[len(d)-1])/float64(time.Millisecond), "max-ms")
	b.ReportMetric(0, "ns/op")
}

func sumJobs(m *sync.Map) float64 {
	total := 0
	m.Range(func(_, v any) bool {
		total += v.(int)
		return true
	})
	return float64(total)
}

// BenchmarkIdleWaiters measures what 3,000 consumers blocked on empty queues cost Redis: script
// calls per second over a 40 s window (one whole cycle of the default re-check) once every waiter
// has made its first look, with the default safety re-check and with the 1 s one of earlier
// versions. Run with -benchtime 1x; each iteration is one 40 s window.
func BenchmarkIdleWaiters(b *testing.B) {
	for _, c := range []struct {
		name   string
		wakeup time.Duration
	}{{"default", 0}, {"recheck_1s", time.Second}} {
		b.Run(c.name, func(b *testing.B) {
			env := redistest.New(b)
			rdb, err := redisx.NewClient(env.URL)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = rdb.Close() })
			calls := scriptCalls()
			rdb.AddHook(calls)
			qc, err := queue.NewClient(rdb, queue.Config{Prefix: env.Prefix, WakeupInterval: c.wakeup})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = qc.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			const waiters = 3000
			var wg sync.WaitGroup
			for i := range waiters {
				wg.Go(func() {
					_, _ = qc.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"idle-" + strconv.Itoa(i)},
						Timeout: time.Hour})
				})
			}
			b.Cleanup(func() { cancel(); wg.Wait() })
			testwait.Until(b, time.Minute, "every waiter's first look", func() bool { return calls.Count() >= waiters })
			const window = 40 * time.Second
			var perSecond float64
			for b.Loop() {
				before := calls.Count()
				time.Sleep(window) // the window measured: idle waiting, nothing else happens
				perSecond = float64(calls.Count()-before) / window.Seconds()
			}
			b.ReportMetric(perSecond, "script-calls/s")
		})
	}
}
