package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/ratelimit"
)

const (
	us = int64(1)
	ms = 1000 * us
	s  = 1000 * ms
)

// step is one call at a given offset from the start of the scripted clock. n < 0 is a refund of
// -n. retry and reset are in µs; -1 skips the check.
type step struct {
	at        int64
	n         int
	allowed   bool
	remaining int
	retry     int64
	reset     int64
}

// TestAlgorithmEdges drives each algorithm's script with a hand-moved clock across the edges of
// its windows and checks every field of every decision.
func TestAlgorithmEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   ratelimit.Config
		steps []step
	}{
		{
			name: "gcra burst then one per interval",
			cfg:  ratelimit.Config{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 5}},
			steps: []step{
				{at: 0, n: 5, allowed: true, remaining: 0, retry: 0, reset: 500 * ms},
				{at: 0, n: 1, allowed: false, remaining: 0, retry: 100 * ms, reset: 500 * ms},
				{at: 100*ms - 1, n: 1, allowed: false, remaining: 0, retry: 1, reset: 400*ms + 1},
				{at: 100 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 500 * ms},
				{at: 300 * ms, n: 3, allowed: false, remaining: 2, retry: 100 * ms, reset: 300 * ms},
				{at: 300 * ms, n: 2, allowed: true, remaining: 0, retry: 0, reset: 500 * ms},
				{at: 300 * ms, n: -2, allowed: true, remaining: -1, retry: -1, reset: -1}, // refund
				{at: 300 * ms, n: 1, allowed: true, remaining: 1, retry: 0, reset: 400 * ms},
				{at: 300 * ms, n: -100, allowed: true, remaining: -1, retry: -1, reset: -1}, // refund past full
				{at: 300 * ms, n: 1, allowed: true, remaining: 4, retry: 0, reset: 100 * ms},
				{at: 10 * s, n: 5, allowed: true, remaining: 0, retry: 0, reset: 500 * ms},
			},
		},
		{
			name: "gcra fractional interval does not drift",
			// One event every 333333.33µs: the k-th after the first burst is due at ceil(k s / 3),
			// and not a microsecond before, however many have gone by.
			cfg: ratelimit.Config{Algorithm: ratelimit.GCRA, Limit: ratelimit.Limit{Rate: 3, Period: time.Second, Burst: 3}},
			steps: func() []step {
				st := []step{{at: 0, n: 3, allowed: true, remaining: 0, retry: 0, reset: s}}
				for k := int64(1); k <= 40; k++ {
					due := (k*s + 2) / 3
					st = append(st,
						step{at: due - 1, n: 1, allowed: false, remaining: 0, retry: 1, reset: -1},
						step{at: due, n: 1, allowed: true, remaining: 0, retry: 0, reset: -1})
				}
				return st
			}(),
		},
		{
			// A third of a microsecond per event: exact, with no rounding to drift on. (Periods in
			// these tests are long enough that keys do not expire in real time mid-test.)
			name: "gcra at three million per second",
			cfg:  ratelimit.Config{Algorithm: ratelimit.GCRA, Limit: ratelimit.PerSecond(3_000_000)},
			steps: []step{
				{at: 0, n: 3_000_000, allowed: true, remaining: 0, retry: 0, reset: s},
				{at: 0, n: 1, allowed: false, remaining: 0, retry: 1, reset: s},
				{at: s - 1, n: 2_999_998, allowed: false, remaining: 2_999_997, retry: 1, reset: 1},
				{at: s, n: 3_000_000, allowed: true, remaining: 0, retry: 0, reset: s},
				{at: s + 10, n: 31, allowed: false, remaining: 30, retry: 1, reset: s - 10},
				{at: s + 10, n: 30, allowed: true, remaining: 0, retry: 0, reset: s},
			},
		},
		{
			name: "fixed window aligned to the clock",
			cfg:  ratelimit.Config{Algorithm: ratelimit.FixedWindow, AlignWindows: true, Limit: ratelimit.PerSecond(3)},
			steps: []step{
				{at: 500 * ms, n: 2, allowed: true, remaining: 1, retry: 0, reset: 500 * ms},
				{at: 500 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 500 * ms},
				{at: 500 * ms, n: 1, allowed: false, remaining: 0, retry: 500 * ms, reset: 500 * ms},
				{at: s - 1, n: 1, allowed: false, remaining: 0, retry: 1, reset: 1},
				{at: s, n: 3, allowed: true, remaining: 0, retry: 0, reset: s},
				{at: s + 1, n: -2, allowed: true, remaining: -1, retry: -1, reset: -1}, // refund
				{at: s + 1, n: 1, allowed: true, remaining: 1, retry: 0, reset: s - 1},
				{at: 5*s + 250*ms, n: 3, allowed: true, remaining: 0, retry: 0, reset: 750 * ms},
			},
		},
		{
			name: "fixed window from the first event",
			cfg:  ratelimit.Config{Algorithm: ratelimit.FixedWindow, Limit: ratelimit.PerSecond(3)},
			steps: []step{
				{at: 500 * ms, n: 3, allowed: true, remaining: 0, retry: 0, reset: s},
				{at: s, n: 1, allowed: false, remaining: 0, retry: 500 * ms, reset: 500 * ms},
				{at: 1500*ms - 1, n: 1, allowed: false, remaining: 0, retry: 1, reset: 1},
				{at: 1500 * ms, n: 1, allowed: true, remaining: 2, retry: 0, reset: s},
				{at: 1600 * ms, n: -5, allowed: true, remaining: -1, retry: -1, reset: -1}, // refund past zero
				{at: 1600 * ms, n: 3, allowed: true, remaining: 0, retry: 0, reset: 900 * ms},
			},
		},
		{
			name: "sliding window weighs the previous window",
			cfg:  ratelimit.Config{Algorithm: ratelimit.SlidingWindow, Limit: ratelimit.PerSecond(10)},
			steps: []step{
				{at: s - 1, n: 10, allowed: true, remaining: 0, retry: 0, reset: 2*s - (s - 1)},
				// next window, elapsed 0: the previous 10 still weigh fully
				{at: s, n: 1, allowed: false, remaining: 0, retry: 100 * ms, reset: s},
				{at: 1100*ms - 1, n: 1, allowed: false, remaining: 0, retry: 1, reset: 900*ms + 1},
				{at: 1100 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 1900 * ms},
				// half way: 10 * 0.5 + 1 = 6 counted
				{at: 1500 * ms, n: 5, allowed: false, remaining: 4, retry: 100 * ms, reset: 1500 * ms},
				{at: 1500 * ms, n: 4, allowed: true, remaining: 0, retry: 0, reset: 1500 * ms},
				{at: 1500 * ms, n: -1, allowed: true, remaining: -1, retry: -1, reset: -1}, // refund
				{at: 1500 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 1500 * ms},
				// next window: the 5 of the last one weigh half at the middle
				{at: 2500 * ms, n: 1, allowed: true, remaining: 6, retry: 0, reset: 1500 * ms},
				// a full window later nothing is left
				{at: 4 * s, n: 10, allowed: true, remaining: 0, retry: 0, reset: 2 * s},
				// full now: the next room is in the next window, once this one's weight drops to 9
				{at: 4 * s, n: 1, allowed: false, remaining: 0, retry: 1100 * ms, reset: 2 * s},
				{at: 5100 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: 1900 * ms},
			},
		},
		{
			name: "sliding log is exact",
			cfg:  ratelimit.Config{Algorithm: ratelimit.SlidingLog, Limit: ratelimit.PerSecond(3)},
			steps: []step{
				{at: 0, n: 1, allowed: true, remaining: 2, retry: 0, reset: s},
				{at: 100 * ms, n: 1, allowed: true, remaining: 1, retry: 0, reset: s},
				{at: 200 * ms, n: 1, allowed: true, remaining: 0, retry: 0, reset: s},
				{at: s - 1, n: 1, allowed: false, remaining: 0, retry: 1, reset: 200*ms + 1},
				{at: s, n: 1, allowed: true, remaining: 0, retry: 0, reset: s},
				{at: s, n: 2, allowed: false, remaining: 0, retry: 200 * ms, reset: s},
				{at: s, n: -1, allowed: true, remaining: -1, retry: -1, reset: -1}, // refund: drops the newest
				{at: s, n: 1, allowed: true, remaining: 0, retry: 0, reset: s},
				{at: s, n: -2, allowed: true, remaining: -1, retry: -1, reset: -1},
				{at: s, n: 2, allowed: true, remaining: 0, retry: 0, reset: s},
				{at: 3 * s, n: 3, allowed: true, remaining: 0, retry: 0, reset: s},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, env *redistest.Env) {
				l := newLimiter(t, env, tt.cfg)
				clock := newFakeClock()
				t0 := clock.now()
				ratelimit.SetNow(l, clock.now)
				for i, st := range tt.steps {
					clock.set(t0 + st.at)
					if st.n < 0 {
						if err := l.Refund(context.Background(), "k", -st.n); err != nil {
							t.Fatalf("step %d: Refund(%d): %v", i, -st.n, err)
						}
						continue
					}
					got := decide(t, l, "k", st.n)
					want := ratelimit.Result{
						Allowed:    st.allowed,
						Limit:      l.Limit().Burst,
						Remaining:  st.remaining,
						RetryAfter: time.Duration(st.retry) * time.Microsecond,
						ResetAfter: time.Duration(st.reset) * time.Microsecond,
					}
					if st.reset < 0 {
						want.ResetAfter = got.ResetAfter
					}
					if got != want {
						t.Fatalf("step %d (at +%dµs, n=%d):\n got %+v\nwant %+v", i, st.at, st.n, got, want)
					}
				}
			})
		})
	}
}

// TestEveryKeyHasTTL checks that no algorithm leaves a key without an expiry, and that the
// expiry is no longer than the state can matter.
func TestEveryKeyHasTTL(t *testing.T) {
	t.Parallel()
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.SlidingLog, ratelimit.SlidingWindow, ratelimit.FixedWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, env *redistest.Env) {
				lim := ratelimit.PerMinute(10)
				l := newLimiter(t, env, ratelimit.Config{Algorithm: alg, Limit: lim})
				decide(t, l, "k", 3)
				decide(t, l, "k", 1) // a second write keeps (or renews) the TTL
				ttl, err := env.Client.PTTL(context.Background(), ratelimit.LimiterKey(env.Prefix, alg.String(), "k")).Result()
				if err != nil {
					t.Fatal(err)
				}
				// Sliding window state matters for two windows; the others for one period. GCRA's
				// TTL has the time to fill the bucket (one period here) to spare.
				maxTTL := lim.Period
				if alg == ratelimit.SlidingWindow || alg == ratelimit.GCRA {
					maxTTL = 2 * lim.Period
				}
				if ttl <= 0 || ttl > maxTTL+time.Millisecond {
					t.Fatalf("PTTL = %s, want in (0, %s]", ttl, maxTTL)
				}
			})
		})
	}
}

// TestInvalidCost: a cost the limit can never allow is an error, not an endless "no".
func TestInvalidCost(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.SlidingLog, ratelimit.SlidingWindow, ratelimit.FixedWindow} {
		l := newLimiter(t, env, ratelimit.Config{Algorithm: alg, Limit: ratelimit.Limit{Rate: 10, Period: time.Second, Burst: 4}})
		max := l.Limit().Burst // 4 for GCRA, 10 for the others
		for _, n := range []int{0, -1, max + 1} {
			_, err := l.AllowN(context.Background(), "k", n)
			if !errors.Is(err, ratelimit.ErrInvalidCost) {
				t.Errorf("%s: AllowN(%d) error = %v, want ErrInvalidCost", alg, n, err)
			}
		}
		if res := decide(t, l, "k", max); !res.Allowed || res.Remaining != 0 {
			t.Errorf("%s: AllowN(%d) = %+v, want allowed with nothing left", alg, max, res)
		}
		if err := l.Refund(context.Background(), "k", 0); !errors.Is(err, ratelimit.ErrInvalidCost) {
			t.Errorf("%s: Refund(0) error = %v, want ErrInvalidCost", alg, err)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	tests := []struct {
		cfg  ratelimit.Config
		want string
	}{
		{ratelimit.Config{}, "Limit.Rate"},
		{ratelimit.Config{Limit: ratelimit.Limit{Rate: 1}}, "Limit.Period"},
		{ratelimit.Config{Limit: ratelimit.Limit{Rate: 1, Period: time.Second, Burst: -1}}, "Limit.Burst"},
		{ratelimit.Config{Limit: ratelimit.Limit{Rate: 1 << 30, Period: 24 * time.Hour}}, "2^53"},
		{ratelimit.Config{Limit: ratelimit.PerSecond(1), Algorithm: 9}, "Algorithm"},
		{ratelimit.Config{Limit: ratelimit.PerSecond(1), FailurePolicy: 9}, "FailurePolicy"},
		{ratelimit.Config{Limit: ratelimit.PerSecond(1), Prefix: "a{b"}, "Prefix"},
		{ratelimit.Config{Limit: ratelimit.PerSecond(1), Name: "x}"}, "Name"},
	}
	for _, tt := range tests {
		_, err := ratelimit.New(env.Client, tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) error = %v, want it to name %s", tt.cfg, err, tt.want)
		}
	}
	if _, err := ratelimit.New(nil, ratelimit.Config{Limit: ratelimit.PerSecond(1)}); err == nil {
		t.Error("New(nil client) succeeded")
	}
}

// TestLoweredLimit: a key that holds more than a newly lowered limit allows is denied, with no
// negative Remaining and a RetryAfter to go by.
func TestLoweredLimit(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.SlidingLog, ratelimit.SlidingWindow, ratelimit.FixedWindow} {
		before := newLimiter(t, env, ratelimit.Config{Algorithm: alg, Limit: ratelimit.PerHour(10)})
		after := newLimiter(t, env, ratelimit.Config{Algorithm: alg, Limit: ratelimit.PerHour(5)})
		decide(t, before, "k", 10)
		res := decide(t, after, "k", 1)
		if res.Allowed || res.Remaining != 0 || res.RetryAfter <= 0 {
			t.Errorf("%s: %+v, want denied with 0 remaining and a RetryAfter", alg, res)
		}
	}
}
