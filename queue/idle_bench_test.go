package queue_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
// namespace that sorts after all the others are handled. Memory and CPU are read once the keys
// with a ttl (the answers publishes keep for a resend, a minute) have expired. Before measuring
// it waits until the registry has been swept once (a Maintainer that keeps a due index leaves a
// mark), at most SLUICE_BENCH_SETTLE (default 10m), and reports how long that took; with
// SLUICE_BENCH_IDLE_FRESH=1 it measures Redis's CPU while the sweep runs, over one window, and
// then marks the registry swept rather than waiting (fresh queues hold nothing to index). It uses
// only the queue's public API, so the same file measures an older version side by side.
// docs/benchmarks.md has the figures and the commands.
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
	atPublish := (redistest.InfoSum(b, env.Client, "memory", "used_memory") - before) / float64(n)
	// A publish keeps its answer for a resend for a minute (a key with a ttl per call): the
	// memory of an idle queue is read once those have gone, as is Redis's CPU (expiring them
	// costs some).
	// Not testwait: a benchmark's own deadline, with the reason it failed.
	expired := time.Now()
	for end := time.Now().Add(5 * time.Minute); redisExpiring(b, env.Client) > float64(n)/100; time.Sleep(time.Second) {
		if time.Now().After(end) {
			b.Fatal("the keys with a ttl did not expire within five minutes")
		}
	}
	expiryWait := time.Since(expired)
	perQueue := (redistest.InfoSum(b, env.Client, "memory", "used_memory") - before) / float64(n)

	m := queue.NewMaintainer(c, queue.MaintainerConfig{Logger: quiet})
	start := time.Now()
	if err := m.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Stop)
	sweepCPU := -1.0
	if os.Getenv("SLUICE_BENCH_IDLE_FRESH") == "1" {
		// Freshly published queues hold nothing an older version stored, so the sweep has nothing
		// to index: its cost is measured over one window, then the registry is marked swept (the
		// mark a completed sweep leaves), which ends it.
		sweepCPU = redistest.CPUPercentOver(b, env.Client, window) // what the sweep costs Redis
		if err := env.Client.Set(ctx, env.Prefix+":due:swept", "1", time.Hour).Err(); err != nil {
			b.Fatal(err)
		}
	}
	// Not testwait: an older version leaves no mark, and its figures are taken after settle all
	// the same.
	for time.Since(start) < settle && env.Client.Exists(ctx, env.Prefix+":due:swept").Val() == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	swept := time.Since(start)

	cpu := redistest.CPUPercentOver(b, env.Client, window) // the idle queues' cost

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
	b.ReportMetric(atPublish, "bytes/queue-at-publish")
	b.ReportMetric(expiryWait.Seconds(), "expiry-wait-s")
	b.ReportMetric(swept.Seconds(), "settle-s")
	if sweepCPU >= 0 {
		b.ReportMetric(sweepCPU, "sweep-redis-cpu-%")
	}
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

// redisExpiring is the number of keys with a ttl (INFO keyspace, db0's expires), summed over the
// masters of a cluster.
func redisExpiring(b *testing.B, rdb redis.UniversalClient) float64 {
	read := func(c redis.Cmdable) (float64, error) {
		info, err := c.Info(context.Background(), "keyspace").Result()
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(info, "\r\n") {
			db, ok := strings.CutPrefix(line, "db0:")
			if !ok {
				continue
			}
			for _, kv := range strings.Split(db, ",") {
				if v, ok := strings.CutPrefix(kv, "expires="); ok {
					return strconv.ParseFloat(v, 64)
				}
			}
		}
		return 0, nil // no keys at all
	}
	total, err := 0.0, error(nil)
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err = cc.ForEachMaster(context.Background(), func(_ context.Context, c *redis.Client) error {
			v, err := read(c)
			mu.Lock()
			total += v
			mu.Unlock()
			return err
		})
	} else {
		total, err = read(rdb)
	}
	if err != nil {
		b.Fatal(err)
	}
	return total
}

func envInt(name string, def int) int {
	v, _ := strconv.Atoi(os.Getenv(name))
	return cmp.Or(v, def)
}

func envDuration(name string, def time.Duration) time.Duration {
	v, _ := time.ParseDuration(os.Getenv(name))
	return cmp.Or(v, def)
}
