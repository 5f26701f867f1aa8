package ratelimit_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/ratelimit"
)

// benchGoroutines is how many goroutines run each benchmark (rounded to a multiple of GOMAXPROCS).
const benchGoroutines = 50

// benchClient is a client of the test Redis with a pool big enough for every goroutine.
func benchClient(b *testing.B) (*redis.Client, string) {
	b.Helper()
	env := redistest.New(b)
	opts, err := redis.ParseURL(env.URL)
	if err != nil {
		b.Fatal(err)
	}
	opts.PoolSize = benchGoroutines
	client := redis.NewClient(opts)
	b.Cleanup(func() { _ = client.Close() })
	return client, env.Prefix
}

func runParallel(b *testing.B, op func(ctx context.Context, key string) error) {
	b.Helper()
	b.SetParallelism(max(1, benchGoroutines/runtime.GOMAXPROCS(0)))
	var seq atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		key := "bench-" + strconv.FormatInt(seq.Add(1), 10)
		for pb.Next() {
			if err := op(ctx, key); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkAllow measures one decision per call, 50 goroutines on their own keys, each key
// limited to 1000 events a second (so both the allow and the deny paths run).
func BenchmarkAllow(b *testing.B) {
	for _, alg := range algorithms {
		b.Run(alg.String(), func(b *testing.B) {
			client, prefix := benchClient(b)
			l, err := ratelimit.New(client, ratelimit.Config{Algorithm: alg, Limit: ratelimit.PerSecond(1000), Prefix: prefix})
			if err != nil {
				b.Fatal(err)
			}
			runParallel(b, func(ctx context.Context, key string) error {
				_, err := l.Allow(ctx, key)
				return err
			})
		})
	}
}

// BenchmarkConcurrency measures an Acquire and its Release (two round trips).
func BenchmarkConcurrency(b *testing.B) {
	client, prefix := benchClient(b)
	c, err := ratelimit.NewConcurrency(client, ratelimit.ConcurrencyConfig{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	runParallel(b, func(ctx context.Context, key string) error {
		res, err := c.Acquire(ctx, key, 10, time.Minute)
		if err != nil || !res.Acquired {
			return err
		}
		return c.Release(ctx, key, res.LeaseID)
	})
}
