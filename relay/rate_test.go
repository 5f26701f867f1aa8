package relay_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

// A second that the start log shows full starts no more calls: with ten calls (QPS 10) logged as
// starting in [now + 1s, now + 1.09s) (as late calls are, at their real start), the first task
// waits until the first of them is more than the start log's span (1005 ms) behind.
func TestFullSecondInTheStartLogStartsNoCall(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		tg := newTarget(t, nil)
		setEndpoint(t, c, relay.Endpoint{Name: "full", TargetURL: tg.URL, QPS: 10, Concurrency: 100})
		var ids []string
		for range 5 {
			ids = append(ids, submit(t, c, relay.SubmitParams{Endpoint: "full"}).ID)
		}
		now, err := env.Client.Time(ctxT(t)).Result()
		if err != nil {
			t.Fatal(err)
		}
		first := now.UnixMilli() + 1000
		key := env.Prefix + ":relay:{ep:full}:starts"
		var log []redis.Z
		for i := range 10 {
			log = append(log, redis.Z{Score: float64(first + 10*int64(i)), Member: "earlier." + strconv.Itoa(i) + "#1"})
		}
		if err := env.Client.ZAdd(ctxT(t), key, log...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.PExpire(ctxT(t), key, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		startDispatcher(t, c, relay.DispatcherConfig{})
		// StartedAt is the start rounded down to the ms.
		free := first + 1005
		for _, id := range ids {
			task := waitFinal(t, c, id)
			if task.Status != relay.StatusCompleted {
				t.Fatalf("task %s = %s (%s)", id, task.Status, task.Error)
			}
			if started := task.StartedAt.UnixMilli(); started < free {
				t.Fatalf("task started at %d, in the second of the ten logged calls (it frees at %d)", started, free)
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
