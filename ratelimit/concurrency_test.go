package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/ratelimit"
)

func newConcurrency(t *testing.T, client redis.UniversalClient, prefix string) *ratelimit.Concurrency {
	t.Helper()
	c, err := ratelimit.NewConcurrency(client, ratelimit.ConcurrencyConfig{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func acquire(t *testing.T, c *ratelimit.Concurrency, key string, limit int, lease time.Duration) ratelimit.AcquireResult {
	t.Helper()
	res, err := c.Acquire(context.Background(), key, limit, lease)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return res
}

func TestConcurrencyLeases(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := newConcurrency(t, env.Client, env.Prefix)
		clock := newFakeClock()
		t0 := clock.now()
		ratelimit.SetConcurrencyNow(c, clock.now)

		a := acquire(t, c, "k", 2, time.Second)
		clock.set(t0 + 100*ms)
		b := acquire(t, c, "k", 2, time.Second)
		if !a.Acquired || !b.Acquired || a.LeaseID == "" || a.LeaseID == b.LeaseID || b.Held != 2 {
			t.Fatalf("two acquires under limit 2: %+v, %+v", a, b)
		}
		full := acquire(t, c, "k", 2, time.Second)
		if full.Acquired || full.LeaseID != "" || full.Held != 2 || full.RetryAfter != 900*time.Millisecond {
			t.Fatalf("third acquire: %+v, want refused until the first lease ends in 900ms", full)
		}

		// Extend moves a's end to 2s from now (2.1s); b now ends first, at 1.1s.
		if err := c.Extend(ctx, "k", a.LeaseID, 2*time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if r := acquire(t, c, "k", 2, time.Second); r.Acquired || r.RetryAfter != time.Second {
			t.Fatalf("after Extend: %+v, want refused for 1s (until b ends)", r)
		}

		// b's holder crashes: its lease ends by itself at 1.1s.
		clock.set(t0 + 1100*ms)
		c2 := acquire(t, c, "k", 2, time.Second)
		if !c2.Acquired || c2.Held != 2 {
			t.Fatalf("after b expired: %+v, want acquired with 2 held", c2)
		}
		if err := c.Release(ctx, "k", b.LeaseID); !errors.Is(err, ratelimit.ErrLeaseLost) {
			t.Fatalf("Release of an expired lease: %v, want ErrLeaseLost", err)
		}
		if err := c.Extend(ctx, "k", b.LeaseID, time.Second); !errors.Is(err, ratelimit.ErrLeaseLost) {
			t.Fatalf("Extend of an expired lease: %v, want ErrLeaseLost", err)
		}
		if err := c.Release(ctx, "k", a.LeaseID); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := c.Release(ctx, "k", a.LeaseID); !errors.Is(err, ratelimit.ErrLeaseLost) {
			t.Fatalf("second Release: %v, want ErrLeaseLost", err)
		}
		if r := acquire(t, c, "k", 2, time.Second); !r.Acquired || r.Held != 2 {
			t.Fatalf("after Release: %+v, want acquired", r)
		}

		// The key lives exactly as long as its last lease.
		pttl, err := env.Client.PTTL(ctx, ratelimit.SemaphoreKey(env.Prefix, "k")).Result()
		if err != nil || pttl <= 0 || pttl > time.Second {
			t.Fatalf("PTTL = %s, %v; want in (0, 1s]", pttl, err)
		}
	})
}

func TestConcurrencyInvalidArgs(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newConcurrency(t, env.Client, env.Prefix)
	if _, err := c.Acquire(context.Background(), "k", 0, time.Second); err == nil {
		t.Error("Acquire with limit 0 succeeded")
	}
	if _, err := c.Acquire(context.Background(), "k", 1, 0); err == nil {
		t.Error("Acquire with lease 0 succeeded")
	}
	if err := c.Extend(context.Background(), "k", "x", 0); err == nil {
		t.Error("Extend with lease 0 succeeded")
	}
	if _, err := ratelimit.NewConcurrency(env.Client, ratelimit.ConcurrencyConfig{Prefix: "{x}"}); err == nil {
		t.Error("a prefix with a hash tag was accepted")
	}
}

// TestAcquireWaitWokenByRelease: the holders' leases last an hour, so only the release's message
// can wake the waiter in time.
func TestAcquireWaitWokenByRelease(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		holder := newConcurrency(t, env.Client, env.Prefix)
		waiter := newConcurrency(t, secondClient(t, env), env.Prefix)
		held := acquire(t, holder, "k", 1, time.Hour)

		got := make(chan ratelimit.AcquireResult, 1)
		errc := make(chan error, 1)
		go func() {
			res, err := waiter.AcquireWait(ctx, "k", 1, time.Hour)
			if err != nil {
				errc <- err
				return
			}
			got <- res
		}()
		// Release only once the waiter has subscribed, or the test proves nothing.
		channel := ratelimit.SemaphoreKey(env.Prefix, "k") + ":released"
		testwait.Until(t, time.Minute, "the waiter to subscribe", func() bool {
			n, err := env.Client.PubSubShardNumSub(ctx, channel).Result()
			return err == nil && n[channel] > 0
		})
		if err := holder.Release(ctx, "k", held.LeaseID); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-got:
			if !res.Acquired || res.Held != 1 {
				t.Fatalf("AcquireWait = %+v", res)
			}
		case err := <-errc:
			t.Fatalf("AcquireWait: %v", err)
		}
	})
}

// TestAcquireWaitAfterCrash: holders that never release block waiters only until their leases
// end; the waiter sleeps until then instead of polling.
func TestAcquireWaitAfterCrash(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := newConcurrency(t, env.Client, env.Prefix)
		for range 2 {
			if r := acquire(t, c, "k", 2, 150*time.Millisecond); !r.Acquired {
				t.Fatal("setup acquire failed")
			}
		}
		res, err := c.AcquireWait(ctx, "k", 2, time.Minute)
		if err != nil || !res.Acquired || res.Held > 2 {
			t.Fatalf("AcquireWait = %+v, %v; want acquired once a crashed lease ended", res, err)
		}

		cctx, ccancel := context.WithCancel(context.Background())
		ccancel()
		if _, err := c.AcquireWait(cctx, "k", 1, time.Minute); !errors.Is(err, context.Canceled) {
			t.Fatalf("AcquireWait on a canceled context: %v", err)
		}
	})
}

// TestConcurrencyNeverOverLimit: workers on two clients take turns through a semaphore of 3,
// some of them "crashing" (never releasing, with short leases); the holders alive at once never
// exceed the limit, and everyone gets through.
func TestConcurrencyNeverOverLimit(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		const limit, workers, rounds = 3, 8, 4
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sems := []*ratelimit.Concurrency{
			newConcurrency(t, env.Client, env.Prefix),
			newConcurrency(t, secondClient(t, env), env.Prefix),
		}
		var live, peak atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			sem := sems[w%2]
			wg.Go(func() {
				for r := range rounds {
					crash := w%4 == 0 && r == 0
					lease := time.Minute
					if crash {
						lease = 200 * time.Millisecond
					}
					res, err := sem.AcquireWait(ctx, "k", limit, lease)
					if err != nil {
						t.Error(err)
						return
					}
					if crash {
						continue // holds its slot until the lease ends; never counted as live
					}
					n := live.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					// work while holding: a round trip to Redis
					held, err := env.Client.ZCard(ctx, ratelimit.SemaphoreKey(env.Prefix, "k")).Result()
					if err != nil || held > limit {
						t.Errorf("ZCARD = %d, %v; want at most %d", held, err, limit)
					}
					live.Add(-1)
					if err := sem.Release(ctx, "k", res.LeaseID); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if p := peak.Load(); p > limit || p < 1 {
			t.Fatalf("peak live holders %d, want 1..%d", p, limit)
		}
	})
}

// An acquire whose reply is lost reaches Redis twice (go-redis sends it again) and takes one
// lease: the caller hears it acquired, and with a limit of 1 nobody else gets in until it
// releases. A release whose reply is lost answers released (its call id), not ErrLeaseLost.
func TestRepeatedAcquireTakesOneLease(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	rdb, proxy := flakyproxy.NewClient(t, env)
	flaky := newConcurrency(t, rdb, env.Prefix)
	c := newConcurrency(t, env.Client, env.Prefix)
	rule := proxy.DropReplies(flakyproxy.FunctionCall("concurrency_acquire"), 1)
	res, err := flaky.Acquire(t.Context(), "k", 1, time.Minute)
	if err != nil || !res.Acquired || rule.Dropped() != 1 {
		t.Fatalf("acquire, reply lost: %+v, %v (%d dropped); want acquired", res, err, rule.Dropped())
	}
	if other := acquire(t, c, "k", 1, time.Minute); other.Acquired || other.Held != 1 {
		t.Fatalf("another acquire: %+v; want refused, one lease held", other)
	}
	rule = proxy.DropReplies(flakyproxy.FunctionCall("concurrency_release"), 1)
	if err := flaky.Release(t.Context(), "k", res.LeaseID); err != nil || rule.Dropped() != 1 {
		t.Fatalf("release, reply lost: %v (%d dropped); want released (not ErrLeaseLost)", err, rule.Dropped())
	}
	if next := acquire(t, c, "k", 1, time.Minute); !next.Acquired {
		t.Fatalf("after the release: %+v; want acquired", next)
	}
}
