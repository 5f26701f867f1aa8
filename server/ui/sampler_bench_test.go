package ui

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// BenchmarkSamplerIdleQueues measures what the dashboard's throughput sampler costs Redis with
// many idle queues (b.N ignored; run with -benchtime 1x): SLUICE_BENCH_QUEUES queues (default
// 100,000) of one ready job each that nobody takes, sampled every SampleInterval (10 s) as
// `sluice server` does. After the passes that find them quiet, Redis's CPU and the sampler's
// commands over SLUICE_BENCH_IDLE_WINDOW (default 1m, longer than quietEvery would be best:
// set it to 5m to count the quiet queues' own samples).
func BenchmarkSamplerIdleQueues(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_BENCH_QUEUES"))
	n = cmp.Or(n, 100000)
	window, _ := time.ParseDuration(os.Getenv("SLUICE_BENCH_IDLE_WINDOW"))
	window = cmp.Or(window, time.Minute)
	env := redistest.New(b)
	u, q := setup(b, env)
	ctx := context.Background()
	for start := 0; start < n; start += 1000 {
		ps := make([]queue.PublishParams, 0, 1000)
		for i := start; i < min(start+1000, n); i++ {
			ps = append(ps, queue.PublishParams{Namespace: "bench", Queue: fmt.Sprintf("q%06d", i), Payload: []byte("x")})
		}
		if _, err := q.PublishMany(ctx, ps); err != nil {
			b.Fatal(err)
		}
	}
	calls := &redistest.Counter{Match: func(redis.Cmder) bool { return true }}
	env.Client.AddHook(calls)
	// The first pass samples every queue; the second finds them quiet.
	for range 2 {
		if err := u.sampler.SampleOnce(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := u.sampler.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(u.sampler.Stop)
	b.ResetTimer()
	c0 := calls.Count()
	cpu := redistest.CPUPercentOver(b, env.Client, window)
	b.ReportMetric(float64(n), "queues")
	b.ReportMetric(cpu, "redis-cpu-%")
	b.ReportMetric(float64(calls.Count()-c0)/window.Seconds(), "sampler-cmds/s")
}
