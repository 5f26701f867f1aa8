package store

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// localClock is a producer's clock in a test: the real time without its monotonic reading (so the
// store's arithmetic sees every change of it), off by a skew the test sets and may change while
// the store runs.
type localClock struct{ skew atomic.Int64 }

func (l *localClock) now() time.Time      { return time.Now().Round(0).Add(time.Duration(l.skew.Load())) }
func (l *localClock) set(d time.Duration) { l.skew.Store(int64(d)) }

// loneScripts counts the lone publishes (publish_ready.lua) by the form of their record: around
// Redis's time (the script runs TIME) or stamped by the client; and fails the next stamped one
// when told to.
type loneScripts struct {
	ready, stamped atomic.Int64
	failNext       atomic.Bool
}

func (s *loneScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *loneScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (s *loneScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[0] == "fcall" {
			fn, _ := args[1].(string)
			switch {
			case !strings.HasSuffix(fn, "_"+string(scriptPublishReady)):
			case len(args) == 10: // fcall fn 4 keys... id head tail
				s.ready.Add(1)
			case len(args) == 9: // fcall fn 4 keys... id record
				if s.failNext.CompareAndSwap(true, false) {
					err := errors.New("connection lost (test)")
					cmd.SetErr(err)
					return err
				}
				s.stamped.Add(1)
			}
		}
		return next(ctx, cmd)
	}
}

// redisMs is Redis's clock in ms, rounded down as TIME is in scripts.
func redisMs(ctx context.Context, t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMilli()
}

// The store reads Redis's clock from the replies that carry it: a lone publish with no reading, or
// one older than clockMaxAge, runs TIME in its script (publish_ready.lua) and its reply is the new
// reading; the publishes after it stamp their jobs until the reading is old. A consume and a
// maintenance pass refresh the reading too; a local clock set back, or a failed publish, drops it.
func TestRedisClockIsLearntFromRepliesAndRefreshed(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s, ctx := newTestStore(t, env)
		local := &localClock{}
		s.clocks = newRedisClocks(env.Client, local.now)
		s.clocks.maxRoundTrip = time.Minute.Microseconds() // a slow test machine turns no reading down
		scripts := &loneScripts{}
		env.Client.AddHook(scripts)
		publishOne := func() error { _, err := s.Publish(ctx, "ns", "q", []*NewJob{newJob("p")}); return err }
		publish := func() {
			t.Helper()
			if err := publishOne(); err != nil {
				t.Fatal(err)
			}
		}
		want := func(ready, stamped int64, when string) {
			t.Helper()
			if r, st := scripts.ready.Load(), scripts.stamped.Load(); r != ready || st != stamped {
				t.Fatalf("%s: %d publishes ran TIME and %d were stamped; want %d and %d", when, r, st, ready, stamped)
			}
		}

		publish()
		want(1, 0, "the first publish, with no reading")
		for range 5 {
			publish()
		}
		want(1, 5, "five publishes within two seconds of the reading")

		local.set(clockMaxAge + time.Second)
		publish()
		want(2, 5, "a publish three seconds after the reading")
		publish()
		want(2, 6, "the publish after it")

		local.set(2 * (clockMaxAge + time.Second))
		if _, err := s.Consume(ctx, "ns", "q", 1, 0); err != nil {
			t.Fatal(err)
		}
		publish()
		want(2, 7, "a publish after a consume refreshed the reading")

		local.set(3 * (clockMaxAge + time.Second))
		if _, errs := s.MaintainEach(ctx, []QueueName{{"ns", "q"}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		publish()
		want(2, 8, "a publish after a maintenance pass refreshed the reading")

		local.set(-time.Minute)
		publish()
		want(3, 8, "a publish after the local clock went back a minute")

		scripts.failNext.Store(true)
		if err := publishOne(); err == nil {
			t.Fatal("the publish the test failed returned no error")
		}
		publish()
		want(4, 8, "a publish after a failed one")

		st, err := s.Stats(ctx, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		// Twelve publishes; the consume took one of them, the failed one wrote nothing.
		if st.Published != 12 || st.Ready != 11 {
			t.Fatalf("stats: %d published, %d ready; want 12 and 11", st.Published, st.Ready)
		}
	})
}

// A producer whose clock is ten minutes off, either way, and one whose clock is set by ten minutes
// while it publishes, still record a publish time within the bound of Redis's clock: never after
// Redis's time when the publish returned, and no more than clockMaxRoundTrip + 3 ms before Redis's
// time when it was called (docs/job-states.md). Due time is publish time. On a Cluster each primary
// has its own reading.
func TestPublishTimeIsRedisTimeWithinTheBoundWhateverTheProducerClock(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		const bound = clockMaxRoundTrip + 3*time.Millisecond
		queues := []string{"q0", "q1", "q2", "q3", "q4", "q5"} // on every primary of the test cluster
		for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
			s, ctx := newTestStore(t, env)
			local := &localClock{}
			local.set(skew)
			s.clocks = newRedisClocks(env.Client, local.now)
			for i := range 60 {
				switch i {
				case 20:
					local.set(2 * skew) // the producer's clock is set while it runs
				case 40:
					time.Sleep(clockMaxAge + 100*time.Millisecond) // the readings age out
				}
				q := queues[i%len(queues)]
				job := newJob("p")
				before := redisMs(ctx, t, env.Client)
				if _, err := s.Publish(ctx, "ns", q, []*NewJob{job}); err != nil {
					t.Fatal(err)
				}
				after := redisMs(ctx, t, env.Client)
				j, err := s.Get(ctx, "ns", q, job.ID)
				if err != nil {
					t.Fatal(err)
				}
				published := j.Num(RPublished)
				if published > after || published < before-bound.Milliseconds() {
					t.Fatalf("clock off by %v, publish %d: published at %d, Redis's clock %d before the publish and %d after; bound %v",
						skew, i, published, before, after, bound)
				}
				if due := j.Num(RDue); due != published {
					t.Fatalf("publish %d: due at %d, published at %d", i, due, published)
				}
				if i%7 == 0 {
					time.Sleep(30 * time.Millisecond) // readings of some age
				}
			}
			if s.clocks.cluster != nil {
				primaries := map[string]bool{}
				for _, q := range queues {
					node, err := s.clocks.cluster.MasterForKey(ctx, s.keys.get("ns", q).jobs())
					if err != nil {
						t.Fatal(err)
					}
					primaries[node.Options().Addr] = true
				}
				readings := 0
				s.clocks.byNode.Range(func(_, _ any) bool { readings++; return true })
				if readings != len(primaries) || readings < 2 {
					t.Fatalf("%d readings for the %d primaries the queues live on; want one each", readings, len(primaries))
				}
			}
		}
	})
}

// A reading is never ahead of Redis's clock, is held back by the drift allowance as it ages, is not
// used past clockMaxAge, and is not taken from a reply after a round trip over clockMaxRoundTrip.
func TestRedisClockReadingNeverRunsAhead(t *testing.T) {
	t.Parallel()
	local := &localClock{}
	cs := newRedisClocks(nil, local.now) // a standalone server: one reading
	c := cs.single
	if _, ok := cs.nowMs(c); ok {
		t.Fatal("a clock with no reading gave a time")
	}
	const redisAt = 1_764_000_000_123
	cs.learnOn(c, redisAt, cs.micros())
	now, ok := cs.nowMs(c)
	if !ok || now < redisAt || now > redisAt+clockMaxRoundTrip.Milliseconds() {
		t.Fatalf("just after the reading: %d, %v; want %d or a little more", now, ok, int64(redisAt))
	}
	local.set(clockMaxAge - time.Millisecond)
	aged, ok := cs.nowMs(c)
	// Two seconds later by the local clock, less the allowance of 1 ms for drift.
	if !ok || aged > now+clockMaxAge.Milliseconds()-1 || aged < now+clockMaxAge.Milliseconds()-3 {
		t.Fatalf("%v later: %d, %v; want about %d", clockMaxAge, aged, ok, now+clockMaxAge.Milliseconds()-2)
	}
	local.set(clockMaxAge + time.Millisecond)
	if _, ok := cs.nowMs(c); ok {
		t.Fatal("a reading older than clockMaxAge gave a time")
	}
	local.set(0)
	slow := newRedisClock()
	cs.learnOn(slow, redisAt, cs.micros()-clockMaxRoundTrip.Microseconds()-1000)
	if _, ok := cs.nowMs(slow); ok {
		t.Fatal("a reply after a slow round trip gave a reading")
	}
}
