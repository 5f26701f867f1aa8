package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/ratelimit"
)

var algorithms = []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.SlidingLog, ratelimit.SlidingWindow, ratelimit.FixedWindow}

// TestNeverOverLimitAcrossClients hammers one key from many goroutines on two clients (two
// limiters, as two processes would have) and checks the count: with an hour-long period nothing
// refills during the test, so exactly the limit is allowed (the sliding window, whose previous
// window may still weigh if the test straddles an hour boundary, allows at most the limit).
func TestNeverOverLimitAcrossClients(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, env *redistest.Env) {
				const limit, workers, calls = 40, 8, 15
				cfg := ratelimit.Config{Algorithm: alg, Limit: ratelimit.PerHour(limit), Prefix: env.Prefix}
				a, err := ratelimit.New(env.Client, cfg)
				if err != nil {
					t.Fatal(err)
				}
				b, err := ratelimit.New(secondClient(t, env), cfg)
				if err != nil {
					t.Fatal(err)
				}
				var allowed atomic.Int64
				var wg sync.WaitGroup
				for w := range workers {
					l := a
					if w%2 == 1 {
						l = b
					}
					wg.Go(func() {
						for range calls {
							n := 1 + w%2 // costs of 1 and 2
							res, err := l.AllowN(context.Background(), "shared", n)
							if err != nil {
								t.Error(err)
								return
							}
							if res.Allowed {
								allowed.Add(int64(n))
							}
						}
					})
				}
				wg.Wait()
				// Room for one event may be left when only cost-2 calls came last: top it up.
				for decide(t, a, "shared", 1).Allowed {
					allowed.Add(1)
				}
				got := allowed.Load()
				if got > limit || (alg != ratelimit.SlidingWindow && got != limit) {
					t.Fatalf("allowed %d events, want %d", got, limit)
				}
				st := a.Stats()
				st2 := b.Stats()
				if st.RedisErrors+st2.RedisErrors != 0 || st2.Allowed+st2.Denied != workers*calls/2 {
					t.Fatalf("stats %+v and %+v: want no Redis errors and %d decisions by the second limiter", st, st2, workers*calls/2)
				}
			})
		})
	}
}

// TestAccuracyOverTime runs each algorithm on Redis's own clock for a few windows and checks the
// allowed count against the algorithm's documented upper bound for the time that passed, and that
// at least one window's worth was allowed.
func TestAccuracyOverTime(t *testing.T) {
	t.Parallel()
	const limit = 20
	const period = 100 * time.Millisecond
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			env := redistest.New(t)
			l := newLimiter(t, env, ratelimit.Config{Algorithm: alg, Limit: ratelimit.Limit{Rate: limit, Period: period}, AlignWindows: true})
			var allowed atomic.Int64
			start := time.Now()
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for time.Since(start) < 3*period {
						res, err := l.Allow(context.Background(), "k")
						if err != nil {
							t.Error(err)
							return
						}
						if res.Allowed {
							allowed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start) // every Redis TIME the scripts saw lies within it
			windows := float64(elapsed) / float64(period)
			var bound float64
			switch alg {
			case ratelimit.GCRA: // the burst, then one per interval
				bound = limit + limit*windows
			case ratelimit.SlidingLog: // at most limit in any period-long stretch
				bound = limit * (windows + 1)
			default: // at most limit per aligned window, and the stretch touches at most windows+2
				bound = limit * (windows + 2)
			}
			got := allowed.Load()
			if float64(got) > bound || got < limit {
				t.Fatalf("allowed %d in %s, want between %d and %.0f", got, elapsed, limit, bound)
			}
		})
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		l := newLimiter(t, env, ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Period: 30 * time.Millisecond, Burst: 1}})
		ctx := context.Background()
		decide(t, l, "k", 1)
		for range 3 {
			res, err := l.Wait(ctx, "k")
			if err != nil || !res.Allowed {
				t.Fatalf("Wait = %+v, %v; want allowed", res, err)
			}
		}
		if l.Stats().Allowed != 4 {
			t.Fatalf("Stats().Allowed = %d, want 4", l.Stats().Allowed)
		}
	})
}

func TestWaitPastDeadline(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		l := newLimiter(t, env, ratelimit.Config{Limit: ratelimit.PerHour(1)})
		decide(t, l, "k", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := l.Wait(ctx, "k")
		if !errors.Is(err, context.DeadlineExceeded) || res.Allowed || res.RetryAfter < 59*time.Minute {
			t.Fatalf("Wait = %+v, %v; want a denial with context.DeadlineExceeded right away", res, err)
		}

		cctx, ccancel := context.WithCancel(context.Background())
		ccancel()
		if _, err := l.Wait(cctx, "k"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait on a canceled context: %v, want context.Canceled", err)
		}
	})
}

func TestResetAndNames(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		read := newLimiter(t, env, ratelimit.Config{Name: "read", Limit: ratelimit.PerHour(2)})
		write := newLimiter(t, env, ratelimit.Config{Name: "write", Limit: ratelimit.PerHour(2)})
		decide(t, read, "tok", 2)
		if res := decide(t, write, "tok", 2); !res.Allowed {
			t.Fatal("limiters with different names share a key")
		}
		if res := decide(t, read, "tok", 1); res.Allowed {
			t.Fatal("read limit not enforced")
		}
		if err := read.Reset(context.Background(), "tok"); err != nil {
			t.Fatal(err)
		}
		if res := decide(t, read, "tok", 2); !res.Allowed {
			t.Fatal("Reset did not clear the key")
		}
		if res := decide(t, write, "tok", 1); res.Allowed {
			t.Fatal("Reset of read cleared write")
		}
	})
}
