package cache

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dtm-labs/rockscache"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/cache"
	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const (
	clients = 50   // concurrent callers on the hit path
	hotKeys = 1000 // keys read round-robin, so rockscache's in-process singleflight rarely merges calls
	value   = "value-of-a-hot-key"
	storm   = 1000 // concurrent Gets of one missing key
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// client returns a standalone Redis with a client pooled for the concurrent callers.
func client(tb testing.TB) (*redistest.Env, redis.UniversalClient) {
	tb.Helper()
	env := redistest.New(tb)
	rdb, err := redisx.NewClient(env.URL + "?pool_size=" + strconv.Itoa(clients+10))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = rdb.Close() })
	return env, rdb
}

func keyName(i int) string { return "k" + strconv.Itoa(i%hotKeys) }

// runHits runs get over the hot keys with `clients` concurrent callers.
func runHits(b *testing.B, get func(ctx context.Context, key string) error) {
	ctx := context.Background()
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var seq atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(7919)) // each caller starts elsewhere
		for pb.Next() {
			i++
			if err := get(ctx, keyName(i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkHit compares the hit path: a plain GET of a string, sluice's Get (one GET, decode the
// record and the JSON value) and rockscache's Fetch (a Lua script per read).
func BenchmarkHit(b *testing.B) {
	b.Run("plain-GET", func(b *testing.B) {
		env, rdb := client(b)
		ctx := context.Background()
		for i := range hotKeys {
			if err := rdb.Set(ctx, env.Prefix+":"+keyName(i), value, time.Hour).Err(); err != nil {
				b.Fatal(err)
			}
		}
		runHits(b, func(ctx context.Context, key string) error {
			return rdb.Get(ctx, env.Prefix+":"+key).Err()
		})
	})
	b.Run("sluice", func(b *testing.B) {
		env, rdb := client(b)
		s, err := cache.New[string, string](rdb, cache.Config{Prefix: env.Prefix, TTL: time.Hour, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		load := func(context.Context, string) (string, error) { return value, nil }
		ctx := context.Background()
		for i := range hotKeys {
			if _, err := s.Get(ctx, keyName(i), load); err != nil {
				b.Fatal(err)
			}
		}
		runHits(b, func(ctx context.Context, key string) error {
			_, err := s.Get(ctx, key, load)
			return err
		})
	})
	b.Run("rockscache", func(b *testing.B) {
		env, rdb := client(b)
		rc := rockscache.NewClient(rdb, rockscache.NewDefaultOptions())
		load := func() (string, error) { return value, nil }
		ctx := context.Background()
		for i := range hotKeys {
			if _, err := rc.Fetch2(ctx, env.Prefix+":"+keyName(i), time.Hour, load); err != nil {
				b.Fatal(err)
			}
		}
		runHits(b, func(ctx context.Context, key string) error {
			_, err := rc.Fetch2(ctx, env.Prefix+":"+key, time.Hour, load)
			return err
		})
	})
}

// BenchmarkHitInterleaved runs the three hit paths in alternating slices (100 rounds of 30ms
// each, rotating the order, 50 callers) so that the noise of a shared machine hits all three alike, and reports each
// one's ops/s and sluice's throughput as a percentage of the plain GET's.
func BenchmarkHitInterleaved(b *testing.B) {
	env, rdb := client(b)
	ctx := context.Background()
	s, err := cache.New[string, string](rdb, cache.Config{Prefix: env.Prefix, TTL: time.Hour, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	rc := rockscache.NewClient(rdb, rockscache.NewDefaultOptions())
	load := func(context.Context, string) (string, error) { return value, nil }
	rload := func() (string, error) { return value, nil }
	for i := range hotKeys {
		k := keyName(i)
		if err := rdb.Set(ctx, env.Prefix+":plain:"+k, value, time.Hour).Err(); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, k, load); err != nil {
			b.Fatal(err)
		}
		if _, err := rc.Fetch2(ctx, env.Prefix+":rc:"+k, time.Hour, rload); err != nil {
			b.Fatal(err)
		}
	}
	systems := []struct {
		name string
		get  func(ctx context.Context, key string) error
	}{
		{"plain-GET", func(ctx context.Context, k string) error { return rdb.Get(ctx, env.Prefix+":plain:"+k).Err() }},
		{"sluice", func(ctx context.Context, k string) error { _, err := s.Get(ctx, k, load); return err }},
		{"rockscache", func(ctx context.Context, k string) error {
			_, err := rc.Fetch2(ctx, env.Prefix+":rc:"+k, time.Hour, rload)
			return err
		}},
	}
	ops := make([]int64, len(systems))
	spent := make([]time.Duration, len(systems))
	for b.Loop() {
		for round := range 100 {
			for j := range systems {
				i := (round + j) % len(systems) // rotate who goes first
				n, d := slice(ctx, b, 30*time.Millisecond, systems[i].get)
				ops[i] += n
				spent[i] += d
			}
		}
	}
	rate := make([]float64, len(systems))
	for i, sys := range systems {
		rate[i] = float64(ops[i]) / spent[i].Seconds()
		b.ReportMetric(rate[i], sys.name+"-ops/s")
	}
	b.ReportMetric(100*rate[1]/rate[0], "sluice/plain-%")
	b.ReportMetric(100*rate[2]/rate[0], "rockscache/plain-%")
}

// slice runs get with `clients` concurrent callers for about d and returns the calls made and the
// time they took.
func slice(ctx context.Context, b *testing.B, d time.Duration, get func(ctx context.Context, key string) error) (int64, time.Duration) {
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for c := range clients {
		wg.Go(func() {
			i := c * 7919
			for time.Now().Before(stop) {
				i++
				if err := get(ctx, keyName(i)); err != nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return n.Load(), time.Since(start)
}

// BenchmarkColdKeyStorm: per operation, 1,000 concurrent Gets of one missing key spread over two
// instances (two processes); the loader takes 10ms. loader-calls/op should be 1; ns/op is how long
// the whole storm takes to be answered.
func BenchmarkColdKeyStorm(b *testing.B) {
	b.Run("sluice", func(b *testing.B) {
		env, rdb := client(b)
		var stores [2]*cache.Store[string, string]
		for i := range stores {
			s, err := cache.New[string, string](rdb, cache.Config{Prefix: env.Prefix, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			stores[i] = s
		}
		runStorm(b, func(ctx context.Context, inst int, key string, load func() (string, error)) error {
			_, err := stores[inst].Get(ctx, key, func(context.Context, string) (string, error) { return load() })
			return err
		})
	})
	b.Run("rockscache", func(b *testing.B) {
		env, rdb := client(b)
		rcs := [2]*rockscache.Client{
			rockscache.NewClient(rdb, rockscache.NewDefaultOptions()),
			rockscache.NewClient(rdb, rockscache.NewDefaultOptions()),
		}
		runStorm(b, func(ctx context.Context, inst int, key string, load func() (string, error)) error {
			_, err := rcs[inst].Fetch2(ctx, env.Prefix+":"+key, time.Hour, load)
			return err
		})
	})
}

func runStorm(b *testing.B, get func(ctx context.Context, inst int, key string, load func() (string, error)) error) {
	ctx := context.Background()
	var calls atomic.Int64
	load := func() (string, error) {
		calls.Add(1)
		time.Sleep(10 * time.Millisecond) // the slow query everybody is waiting for
		return value, nil
	}
	round := 0
	for b.Loop() {
		round++
		key := fmt.Sprint("storm", round)
		var wg sync.WaitGroup
		for i := range storm {
			wg.Go(func() {
				if err := get(ctx, i%2, key, load); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(calls.Load())/float64(round), "loader-calls/op")
}

// TestStormCallsLoaderOnce is the storm's floor as a test: 1,000 concurrent Gets of one missing key
// over two Stores call the loader once.
func TestStormCallsLoaderOnce(t *testing.T) {
	env, rdb := client(t)
	ctx := context.Background()
	var stores [2]*cache.Store[string, string]
	for i := range stores {
		s, err := cache.New[string, string](rdb, cache.Config{Prefix: env.Prefix, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	var calls atomic.Int64
	load := func(context.Context, string) (string, error) {
		calls.Add(1)
		time.Sleep(10 * time.Millisecond) // the slow query (workload)
		return value, nil
	}
	var wg sync.WaitGroup
	for i := range storm {
		wg.Go(func() {
			if v, err := stores[i%2].Get(ctx, "cold", load); err != nil || v != value {
				t.Errorf("Get = %q, %v", v, err)
			}
		})
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("loader called %d times, want 1", n)
	}
}
