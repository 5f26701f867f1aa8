package relay

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// late.lua holds [sa + 1s, sa + 1s + lateness + 1ms) for each reported call (the 1 ms because
// sa is rounded down), keeps the longest span reported for a start, ignores tasks it does not
// know, and lets the holds expire.
func TestLateCallHoldsTheNextSecond(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx, k := t.Context(), c.keys.get("slow")
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		sa := now.UnixMilli()
		id := c.ids.next("slow")
		if err := env.Client.HSet(ctx, k.task(id), "st", "processing", "sa", sa).Err(); err != nil {
			t.Fatal(err)
		}
		held, err := c.run(ctx, scriptLate, "slow", 2, id, 7.5, c.ids.next("slow"), 30).Int64()
		if err != nil || held != 1 {
			t.Fatalf("late = %d, %v; want 1 span held (the unknown task ignored)", held, err)
		}
		if _, err := c.run(ctx, scriptLate, "slow", 1, id, 2).Int64(); err != nil {
			t.Fatal(err)
		}
		hold := k.all[11]
		spans, err := env.Client.ZRangeWithScores(ctx, hold, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(spans) != 1 || spans[0].Member != strconv.FormatInt(sa+1000, 10) || spans[0].Score != float64(sa+1008)+0.5 {
			t.Fatalf("holds = %v; want [%d, %d.5)", spans, sa+1000, sa+1008)
		}
		if ttl, err := env.Client.PTTL(ctx, hold).Result(); err != nil || ttl <= 0 || ttl > 3*time.Second {
			t.Fatalf("hold ttl = %s, %v; want it to expire a little after the span", ttl, err)
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

// internalClient is a Client on the test's key prefix, closed when the test ends, for the tests
// inside the package that read its keys and state.
func internalClient(t *testing.T, env *redistest.Env) *Client {
	t.Helper()
	c, err := NewClient(env.Client, Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
