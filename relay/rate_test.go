package relay_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

// A held span of the rate limit (a late call holds back the next second's calls) starts no call:
// the tasks queued before it wait for its end, also when two spans overlap.
func TestHeldSpansStartNoCall(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		tg := newTarget(t, nil)
		setEndpoint(t, c, relay.Endpoint{Name: "held", TargetURL: tg.URL, QPS: 100, Concurrency: 100})
		var ids []string
		for range 20 {
			ids = append(ids, submit(t, c, relay.SubmitParams{Endpoint: "held"}).ID)
		}
		now, err := env.Client.Time(ctxT(t)).Result()
		if err != nil {
			t.Fatal(err)
		}
		ms := now.UnixMilli()
		end := ms + 1500
		key := env.Prefix + ":relay:{ep:held}:hold"
		// Span start (member) -> span end (score): the second span begins inside the first.
		if err := env.Client.ZAdd(ctxT(t), key,
			redis.Z{Score: float64(ms + 800), Member: ms - 1000},
			redis.Z{Score: float64(end), Member: ms + 700},
		).Err(); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.PExpire(ctxT(t), key, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		startDispatcher(t, c, relay.DispatcherConfig{})
		for _, id := range ids {
			task := waitFinal(t, c, id)
			if task.Status != relay.StatusCompleted {
				t.Fatalf("task %s = %s (%s)", id, task.Status, task.Error)
			}
			if started := task.StartedAt.UnixMilli(); started < end {
				t.Fatalf("task started at %d, inside the held spans ending at %d", started, end)
			}
		}
	})
}

// Rate-limited tasks whose queue timeout is shorter than their call's lease all start and end. A
// dispatcher takes rate-limit tokens due within its lookahead, so a task can start after a
// fractional delay, and a task that starts close to its queue deadline has its hash kept for the
// lease: that expiry once went to Redis as a fraction, which PEXPIRE refuses, and the failed take
// lost the tasks it had popped.
func TestRateLimitedTasksWithAShortQueueTimeoutAllEnd(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		tg := newTarget(t, nil)
		// QPS 20 spaces calls 50.25 ms apart (the dispatcher keeps a margin below the QPS), and
		// the 5 s queue timeout is below the default 30 s call timeout.
		setEndpoint(t, c, relay.Endpoint{Name: "short", TargetURL: tg.URL, QPS: 20, Concurrency: 100, QueueTimeout: 5 * time.Second})
		var ids []string
		for range 30 {
			ids = append(ids, submit(t, c, relay.SubmitParams{Endpoint: "short"}).ID)
		}
		startDispatcher(t, c, relay.DispatcherConfig{})
		for _, id := range ids {
			if task := waitFinal(t, c, id); task.Status != relay.StatusCompleted {
				t.Fatalf("task %s = %s (%s)", id, task.Status, task.Error)
			}
		}
	})
}
