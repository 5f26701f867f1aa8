package cache

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// benchClients is the number of concurrent callers in the hit-path benchmarks.
const benchClients = 50

// benchEnv returns a standalone Redis with a client pooled for benchClients callers.
func benchEnv(b *testing.B) (*redistest.Env, redis.UniversalClient) {
	b.Helper()
	env := redistest.New(b)
	rdb, err := redisx.NewClient(env.URL + "?pool_size=" + strconv.Itoa(benchClients+10))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rdb.Close() })
	return env, rdb
}

func parallelism() int { return (benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0) }

func BenchmarkGetHit(b *testing.B) {
	env, rdb := benchEnv(b)
	ctx := context.Background()
	s, err := New[string, string](rdb, Config{Prefix: env.Prefix, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	load := func(context.Context, string) (string, error) { return "value-of-a-hot-key", nil }
	if _, err := s.Get(ctx, "hot", load); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(parallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, "hot", load); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkPlainGET(b *testing.B) {
	env, rdb := benchEnv(b)
	ctx := context.Background()
	key := env.Prefix + ":plain"
	if err := rdb.Set(ctx, key, "value-of-a-hot-key", time.Hour).Err(); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(parallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := rdb.Get(ctx, key).Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkGetMissLoad measures a cold key: GET, lock, load, write back.
func BenchmarkGetMissLoad(b *testing.B) {
	env, rdb := benchEnv(b)
	ctx := context.Background()
	s, err := New[string, string](rdb, Config{Prefix: env.Prefix, Logger: quiet, TTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	load := func(_ context.Context, k string) (string, error) { return k, nil }
	var n atomic.Int64
	b.SetParallelism(parallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, "cold"+strconv.FormatInt(n.Add(1), 10), load); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGetMany100Hits(b *testing.B) {
	env, rdb := benchEnv(b)
	ctx := context.Background()
	s, err := New[int, int](rdb, Config{Prefix: env.Prefix, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	keys := make([]int, 100)
	for i := range keys {
		keys[i] = i
	}
	load := func(_ context.Context, ks []int) (map[int]int, error) {
		m := make(map[int]int, len(ks))
		for _, k := range ks {
			m[k] = k
		}
		return m, nil
	}
	if _, err := s.GetMany(ctx, keys, load); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.GetMany(ctx, keys, load); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkColdKeyStorm: per operation, 1,000 concurrent Gets of one missing key spread over two
// Stores (two processes). loader-calls/op must be 1.
func BenchmarkColdKeyStorm(b *testing.B) {
	env, rdb := benchEnv(b)
	ctx := context.Background()
	var stores [2]*Store[string, string]
	for i := range stores {
		s, err := New[string, string](rdb, Config{Prefix: env.Prefix, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	var calls atomic.Int64
	load := func(_ context.Context, k string) (string, error) {
		calls.Add(1)
		time.Sleep(10 * time.Millisecond) // the slow query everybody is waiting for
		return k, nil
	}
	round := 0
	for b.Loop() {
		round++
		key := fmt.Sprint("storm", round)
		var wg sync.WaitGroup
		for i := range 1000 {
			wg.Go(func() {
				if _, err := stores[i%2].Get(ctx, key, load); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(calls.Load())/float64(round), "loader-calls/op")
}

// BenchmarkHitVsPlainGET alternates short slices of Get hits and plain GETs (100 rounds of 30ms
// each, 50 callers, rotating who goes first) so a shared machine's noise hits both alike, and
// reports Get's throughput as a percentage of the plain GET's. The floor is 85%.
func BenchmarkHitVsPlainGET(b *testing.B) {
	env, rdb := benchEnv(b)
	ctx := context.Background()
	s, err := New[string, string](rdb, Config{Prefix: env.Prefix, TTL: time.Hour, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	load := func(context.Context, string) (string, error) { return "value-of-a-hot-key", nil }
	const keys = 1000
	for i := range keys {
		k := strconv.Itoa(i)
		if err := rdb.Set(ctx, env.Prefix+":plain:"+k, "value-of-a-hot-key", time.Hour).Err(); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, k, load); err != nil {
			b.Fatal(err)
		}
	}
	gets := []func(i int) error{
		func(i int) error { return rdb.Get(ctx, env.Prefix+":plain:"+strconv.Itoa(i%keys)).Err() },
		func(i int) error { _, err := s.Get(ctx, strconv.Itoa(i%keys), load); return err },
	}
	var ops [2]int64
	var spent [2]time.Duration
	for b.Loop() {
		for round := range 100 {
			for j := range gets {
				i := (round + j) % len(gets)
				var n atomic.Int64
				var wg sync.WaitGroup
				start := time.Now()
				stop := start.Add(30 * time.Millisecond)
				for c := range benchClients {
					wg.Go(func() {
						for k := c * 7919; time.Now().Before(stop); k++ {
							if err := gets[i](k); err != nil {
								b.Error(err)
								return
							}
							n.Add(1)
						}
					})
				}
				wg.Wait()
				ops[i] += n.Load()
				spent[i] += time.Since(start)
			}
		}
	}
	plain := float64(ops[0]) / spent[0].Seconds()
	hit := float64(ops[1]) / spent[1].Seconds()
	b.ReportMetric(plain, "plain-GET-ops/s")
	b.ReportMetric(hit, "Get-ops/s")
	b.ReportMetric(100*hit/plain, "Get/plain-%")
}
