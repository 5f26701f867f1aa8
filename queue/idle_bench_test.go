package queue_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// BenchmarkIdleQueues measures what many idle queues cost while a Maintainer runs (default
// settings: a pass every 500 ms): SLUICE_BENCH_IDLE_QUEUES queues (default 100,000) in 100
// namespaces, one small ready job each (the state a producer leaves when nobody consumes), then
// Redis's CPU over SLUICE_BENCH_IDLE_WINDOW (default 30s, INFO CPU used_cpu_sys+user, summed over
// the masters of a cluster), the bytes of Redis memory per idle queue (INFO memory used_memory
// before and after), and how late after its due time a delayed job and an expired lease in a
// namespace that sorts after all the others are handled. Before measuring it waits until the
// registry has been swept once (a Maintainer that keeps a due index leaves a mark), at most
// SLUICE_BENCH_SETTLE (default 10m), and reports how long that took. It uses only the queue's
// public API, so the same file measures an older version side by side. docs/benchmarks.md has the
// figures and the commands.
func BenchmarkIdleQueues(b *testing.B) {
	b.Run("standalone", func(b *testing.B) { benchIdleQueues(b, redistest.New(b)) })
	b.Run("cluster", func(b *testing.B) { benchIdleQueues(b, redistest.NewCluster(b)) })
}

func benchIdleQueues(b *testing.B, env *redistest.Env) {
	n := envInt("SLUICE_BENCH_IDLE_QUEUES", 100000)
	window := envDuration("SLUICE_BENCH_IDLE_WINDOW", 30*time.Second)
	settle := envDuration("SLUICE_BENCH_SETTLE", 10*time.Minute)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	before := redistest.InfoSum(b, env.Client, "memory", "used_memory")
	publishIdle(b, c, n)
	perQueue := (redistest.InfoSum(b, env.Client, "memory", "used_memory") - before) / float64(n)

	m := queue.NewMaintainer(c, queue.MaintainerConfig{Logger: quiet})
	start := time.Now()
	if err := m.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Stop)
	// Not testwait: an older version leaves no mark, and its figures are taken after settle all
	// the same.
	for time.Since(start) < settle && env.Client.Exists(ctx, env.Prefix+":due:swept").Val() == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	swept := time.Since(start)

	cpu := redistest.CPUPercentOver(b, env.Client, window)

	const wait = 2 * time.Second
	if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "zz", Queue: "leased", TTR: wait, Tries: 2}); err != nil {
		b.Fatal(err)
	}
	leasedAt := time.Now()
	if ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "zz", Queues: []string{"leased"}}); err != nil || len(ds) != 1 {
		b.Fatalf("consume: %v, %v", ds, err)
	}
	publishedAt := time.Now()
	if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "zz", Queue: "late", Delay: wait}); err != nil {
		b.Fatal(err)
	}
	promoted := waitFor(b, func() bool { s, _ := c.Stats(ctx, "zz", "late"); return s.Ready == 1 }).Sub(publishedAt.Add(wait))
	reaped := waitFor(b, func() bool { s, _ := c.Stats(ctx, "zz", "leased"); return s.Retried == 1 }).Sub(leasedAt.Add(wait))

	b.ReportMetric(float64(n), "queues")
	b.ReportMetric(cpu, "redis-cpu-%")
	b.ReportMetric(perQueue, "bytes/queue")
	b.ReportMetric(swept.Seconds(), "settle-s")
	b.ReportMetric(float64(promoted.Milliseconds()), "promote-late-ms")
	b.ReportMetric(float64(reaped.Milliseconds()), "reap-late-ms")
}

// publishIdle publishes one small ready job to each of n queues, in namespaces "idle00".."idle99",
// 1,000 jobs a PublishMany from 8 goroutines.
func publishIdle(b *testing.B, c *queue.Client, n int) {
	const batch = 1000
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for start := 0; start < n; start += batch {
		ps := make([]queue.PublishParams, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			ps = append(ps, queue.PublishParams{Namespace: fmt.Sprintf("idle%02d", i%100), Queue: "q" + strconv.Itoa(i), Payload: []byte("x")})
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := c.PublishMany(context.Background(), ps); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
}

// waitFor waits, for at most two minutes, until cond holds, and returns when it held.
func waitFor(b *testing.B, cond func() bool) time.Time {
	b.Helper()
	testwait.Until(b, 2*time.Minute, "the idle queue's job handled", cond)
	return time.Now()
}

func envInt(name string, def int) int {
	v, _ := strconv.Atoi(os.Getenv(name))
	return cmp.Or(v, def)
}

func envDuration(name string, def time.Duration) time.Duration {
	v, _ := time.ParseDuration(os.Getenv(name))
	return cmp.Or(v, def)
}
