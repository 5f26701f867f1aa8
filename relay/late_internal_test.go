package relay

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// late.lua moves a reported call in the start log to its real start: its token's time (the task's
// sa, rounded down, plus 1 ms) plus its lateness; never back (a second, smaller report changes
// nothing), and a report sent twice counts once; a call no longer in the log (trimmed) is logged
// again; unknown tasks are ignored; the log outlives the starts it holds by a second, no more.
func TestLateCallCountsFromItsRealStart(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx, k := t.Context(), c.keys.get("slow")
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		sa := now.UnixMilli()
		logged, trimmed := c.ids.next("slow"), c.ids.next("slow")
		for _, id := range []string{logged, trimmed} {
			if err := env.Client.HSet(ctx, k.task(id), "st", "processing", "sa", sa, "att", 2).Err(); err != nil {
				t.Fatal(err)
			}
		}
		starts := k.all[11]
		token := float64(sa) + 0.25 // as take.lua logs it
		if err := env.Client.ZAdd(ctx, starts, redis.Z{Score: token, Member: logged + "#2"}).Err(); err != nil {
			t.Fatal(err)
		}
		n, err := c.run(ctx, scriptLate, "slow", 3, logged, 7.5, c.ids.next("slow"), 30, trimmed, 4).Int64()
		if err != nil || n != 2 {
			t.Fatalf("late = %d, %v; want 2 calls recorded (the unknown task ignored)", n, err)
		}
		for _, again := range []float64{2, 7.5} {
			if _, err := c.run(ctx, scriptLate, "slow", 1, logged, again).Int64(); err != nil {
				t.Fatal(err)
			}
		}
		got, err := env.Client.ZRangeWithScores(ctx, starts, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := []redis.Z{{Score: float64(sa) + 1 + 4, Member: trimmed + "#2"}, {Score: float64(sa) + 1 + 7.5, Member: logged + "#2"}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("start log = %v, want %v", got, want)
		}
		if ttl, err := env.Client.PTTL(ctx, starts).Result(); err != nil || ttl <= 0 || ttl > 2*time.Second {
			t.Fatalf("start log ttl = %s, %v; want it to expire a second after its last start", ttl, err)
		}
	})
}

// The clock offset is the best (highest) lower bound seen in the last one to two windows: a slow
// round trip does not lower it, and an old bound is forgotten after two windows.
func TestRedisClockKeepsTheBestRecentBound(t *testing.T) {
	t.Parallel()
	var c redisClock
	t0 := time.UnixMicro(time.Now().UnixMicro())
	redisUs := func(ahead time.Duration) int64 { return t0.Add(-ahead).UnixMicro() } // Redis's time at t0
	if got := c.observe(t0, redisUs(3*time.Millisecond)); got != 3*time.Millisecond {
		t.Fatalf("first bound = %s, want 3ms", got)
	}
	// Sent 1s later, run by Redis 2ms after that: a slow round trip gives a low bound (1ms), which
	// does not lower the estimate.
	if got := c.observe(t0.Add(time.Second), redisUs(-time.Second+time.Millisecond)); got != 3*time.Millisecond {
		t.Fatalf("after a low bound = %s, want 3ms", got)
	}
	if got := c.observe(t0.Add(clockWindow), redisUs(-clockWindow+time.Millisecond)); got != 3*time.Millisecond {
		t.Fatalf("one window later = %s, want the previous window's 3ms", got)
	}
	if got := c.observe(t0.Add(2*clockWindow), redisUs(-2*clockWindow+2*time.Millisecond)); got != 2*time.Millisecond {
		t.Fatalf("two windows later = %s, want the recent 2ms", got)
	}
}

// internalClient is a Client on the test's key prefix with the given settings (or the defaults),
// closed when the test ends, for the tests inside the package that read its keys and state.
func internalClient(t *testing.T, env *redistest.Env, cfgs ...Config) *Client {
	t.Helper()
	var cfg Config
	if len(cfgs) > 0 {
		cfg = cfgs[0]
	}
	cfg.Prefix = env.Prefix
	c, err := NewClient(env.Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
