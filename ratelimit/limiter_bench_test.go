package ratelimit_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

// BenchmarkAllowSentTwice weighs the ways a decision's call can be made safe to arrive twice, each
// algorithm's three side by side in one run (as BenchmarkAllow: 50 goroutines, 1000 a second per
// key): counted-again (go-redis resends a call whose reply it lost, so it counts twice: the
// limiter before), no-retry (sent once; a lost reply is an unknown outcome, decided by the failure
// policy: what AllowN does) and call-id (a call key with each call whose answer Redis keeps for a
// repeat). Besides ops/s it reports Redis's time per call (INFO commandstats) and the memory and keys
// Redis still holds per call at the end (the call keys live 60 s).
func BenchmarkAllowSentTwice(b *testing.B) {
	for _, alg := range algorithms {
		for i, way := range ratelimit.SendWayNames {
			b.Run(alg.String()+"/"+way, func(b *testing.B) {
				client, prefix := benchClient(b)
				l, err := ratelimit.New(client, ratelimit.Config{Algorithm: alg, Limit: ratelimit.PerSecond(1000), Prefix: prefix})
				if err != nil {
					b.Fatal(err)
				}
				allow := ratelimit.SendWays(l)[i]
				warmPool(client)
				before := readRedisCost(b, client)
				runParallel(b, allow)
				readRedisCost(b, client).report(b, before)
			})
		}
	}
}

// warmPool opens the pool's connections, so the memory they cost Redis is not counted as the
// calls'.
func warmPool(client *redis.Client) {
	var wg sync.WaitGroup
	for range benchGoroutines {
		wg.Go(func() { _ = client.Ping(context.Background()).Err() })
	}
	wg.Wait()
}

// redisCost is what Redis reports of the script calls it ran and the memory it holds.
type redisCost struct {
	calls, usec, usedMemory, keys float64
}

func readRedisCost(b *testing.B, client *redis.Client) redisCost {
	b.Helper()
	ctx := context.Background()
	info, err := client.Info(ctx, "commandstats", "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	keys, err := client.DBSize(ctx).Result()
	if err != nil {
		b.Fatal(err)
	}
	c := redisCost{keys: float64(keys)}
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "used_memory:"); ok {
			c.usedMemory, _ = strconv.ParseFloat(rest, 64)
		}
		if !strings.HasPrefix(line, "cmdstat_fcall:") && !strings.HasPrefix(line, "cmdstat_evalsha:") {
			continue
		}
		for _, field := range strings.Split(line[strings.IndexByte(line, ':')+1:], ",") {
			k, v, _ := strings.Cut(field, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				c.calls += f
			case "usec":
				c.usec += f
			}
		}
	}
	return c
}

// report adds Redis's µs per script call and the bytes it holds more per call since before.
func (c redisCost) report(b *testing.B, before redisCost) {
	if calls := c.calls - before.calls; calls > 0 {
		b.ReportMetric((c.usec-before.usec)/calls, "redis-µs/call")
		b.ReportMetric(max(c.usedMemory-before.usedMemory, 0)/calls, "redis-B-held/call")
		b.ReportMetric((c.keys-before.keys)/calls, "redis-keys-held/call")
	}
}
