// Package ratelimit_test measures Sluice's rate limiters side by side with go-redis/redis_rate
// and a plain Redis GET, on one redis-server, 50 goroutines.
//
//	cd bench && go test -run '^$' -bench . -benchtime 3s ./ratelimit/
package ratelimit_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/ratelimit"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// goroutines run every benchmark (rounded to a multiple of GOMAXPROCS); every client's pool has
// one connection for each.
const goroutines = 50

// rate is each key's limit per second: every goroutine has its own key, so both the allow and
// the deny paths run.
const rate = 1000

func client(b *testing.B) (*redis.Client, string) {
	b.Helper()
	env := redistest.New(b)
	opts, err := redis.ParseURL(env.URL)
	if err != nil {
		b.Fatal(err)
	}
	opts.PoolSize = goroutines
	c := redis.NewClient(opts)
	b.Cleanup(func() { _ = c.Close() })
	return c, env.Prefix
}

func run(b *testing.B, op func(ctx context.Context, key string) error) {
	b.Helper()
	b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
	var seq atomic.Int64
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

func BenchmarkAllow(b *testing.B) {
	b.Run("get", func(b *testing.B) {
		c, prefix := client(b)
		run(b, func(ctx context.Context, key string) error {
			err := c.Get(ctx, prefix+":"+key).Err()
			if errors.Is(err, redis.Nil) {
				err = nil
			}
			return err
		})
	})
	b.Run("redis_rate", func(b *testing.B) {
		c, prefix := client(b)
		l := redis_rate.NewLimiter(c)
		run(b, func(ctx context.Context, key string) error {
			_, err := l.Allow(ctx, prefix+":"+key, redis_rate.PerSecond(rate))
			return err
		})
	})
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.SlidingLog, ratelimit.SlidingWindow, ratelimit.FixedWindow} {
		b.Run("sluice_"+alg.String(), func(b *testing.B) {
			c, prefix := client(b)
			l, err := ratelimit.New(c, ratelimit.Config{Algorithm: alg, Limit: ratelimit.PerSecond(rate), Prefix: prefix})
			if err != nil {
				b.Fatal(err)
			}
			run(b, func(ctx context.Context, key string) error {
				_, err := l.Allow(ctx, key)
				return err
			})
		})
	}
}
