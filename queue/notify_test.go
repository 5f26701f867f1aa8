package queue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// numSub is the number of subscribers of the channels, on every master of a cluster (a Pub/Sub
// connection is on one node, and PUBSUB NUMSUB counts that node's only).
func numSub(t *testing.T, env *redistest.Env, channels ...string) int64 {
	t.Helper()
	var total atomic.Int64
	count := func(ctx context.Context, c *redis.Client) error {
		m, err := c.PubSubNumSub(ctx, channels...).Result()
		for _, n := range m {
			total.Add(n)
		}
		return err
	}
	var err error
	switch c := env.Client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctxT(t), count)
	case *redis.Client:
		err = count(ctxT(t), c)
	default:
		t.Fatalf("unsupported client %T", env.Client)
	}
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB: %v", err)
	}
	return total.Load()
}

// A client that waited once on each of many queues does not stay subscribed to them all: a
// queue's channel is unsubscribed a little while after its last waiter left, and subscribed again
// for the next one, whom a publish still wakes.
func TestConsumeUnsubscribesChannelsNobodyWaitsOn(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{WakeupInterval: time.Minute}) // only a notification wakes a consumer early
		const queues = 30
		channels := make([]string, queues)
		for i := range queues {
			q := fmt.Sprintf("q%d", i)
			channels[i] = env.Prefix + ":{" + f.ns + ":" + q + "}:notify"
			if ds := f.consume(t, queue.ConsumeParams{Queues: []string{q}, Timeout: time.Millisecond}); len(ds) != 0 {
				t.Fatalf("got %d jobs from an empty queue", len(ds))
			}
		}
		testwait.Until(t, time.Minute, "the idle channels to be unsubscribed", func() bool {
			return numSub(t, env, channels...) == 0
		})

		got := make(chan []queue.Delivery, 1)
		go func() {
			ds, _ := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: []string{"q0"}, Timeout: 30 * time.Second})
			got <- ds
		}()
		testwait.Until(t, 30*time.Second, "the consumer to subscribe again", func() bool {
			return numSub(t, env, channels[0]) == 1
		})
		id := f.publish(t, queue.PublishParams{Queue: "q0"})
		select {
		case ds := <-got:
			if len(ds) != 1 || ds[0].ID != id {
				t.Fatalf("blocked consume got %v, want %s", deliveryIDs(ds), id)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a consumer on a channel subscribed again was not woken by a publish")
		}
	})
}

// A publish wakes consumers only when it makes a ready list non-empty: a consumer blocks only after
// it saw every ready list empty, so a push into a list that already holds jobs has nobody to wake.
// Priorities stay right: a list that was not empty was already among the queue's priorities.
func TestPublishNotifiesOnlyWhenAReadyListStarts(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		notes := subscribeNotify(t, env, f.ns, "q")
		a := f.publish(t, queue.PublishParams{Queue: "q"})               // list 0 starts: wake
		b := f.publish(t, queue.PublishParams{Queue: "q"})               // behind a: nobody waits
		c := f.publish(t, queue.PublishParams{Queue: "q", Priority: 5})  // list 5 starts: wake
		res, err := f.client.PublishMany(ctxT(t), []queue.PublishParams{ // list 7 starts: one wake
			{Namespace: f.ns, Queue: "q"}, {Namespace: f.ns, Queue: "q", Priority: 7},
		})
		if err != nil {
			t.Fatalf("PublishMany: %v", err)
		}
		d, e := res[0].ID, res[1].ID
		got := notes.received(t)
		if len(got) != 3 {
			t.Fatalf("notifications %q, want one per ready list that started (3)", got)
		}
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 10})
		if ids, want := deliveryIDs(ds), []string{e, c, a, b, d}; !slices.Equal(ids, want) {
			t.Fatalf("consumed %v, want %v (priority, then FIFO)", ids, want)
		}
	})
}

// Consumers blocked on a queue each get a job when jobs arrive one at a time, woken by
// notifications alone (no wake-up interval): those the first job woke in vain block again, and
// the next job, published into a list they saw empty, wakes them.
func TestBlockedConsumersAllWokenAsJobsArrive(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{WakeupInterval: time.Minute})
		const consumers = 4
		channel := env.Prefix + ":{" + f.ns + ":q}:notify"
		got := make(chan []queue.Delivery, consumers)
		for range consumers {
			go func() {
				ds, _ := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: []string{"q"}, Timeout: 30 * time.Second})
				got <- ds
			}()
		}
		testwait.Until(t, time.Minute, "the consumers to subscribe", func() bool {
			return numSub(t, env, channel) == 1
		})
		want := map[string]bool{}
		for range consumers {
			want[f.publish(t, queue.PublishParams{Queue: "q"})] = true
		}
		for range consumers {
			select {
			case ds := <-got:
				if len(ds) != 1 || !want[ds[0].ID] {
					t.Fatalf("a blocked consumer got %v, want one of the published jobs", deliveryIDs(ds))
				}
				delete(want, ds[0].ID)
			case <-time.After(20 * time.Second):
				t.Fatalf("%d jobs were published but blocked consumers did not get %d of them", consumers, len(want))
			}
		}
	})
}

// A lone publish whose unique key is held by a job with an ended lease retries that job (the
// holder is settled first) and wakes consumers for it, though it publishes nothing itself.
func TestPublishThatRetriesTheKeyHolderWakesConsumers(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		holder := f.publish(t, queue.PublishParams{Queue: "q", UniqueKey: "k", Tries: 3})
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, TTR: 20 * time.Millisecond})
		if len(ds) != 1 || ds[0].ID != holder {
			t.Fatalf("consumed %v, want %s", deliveryIDs(ds), holder)
		}
		testwait.Until(t, time.Minute, "the lease to end by Redis's clock", func() bool {
			now, err := env.Client.Time(ctxT(t)).Result()
			return err == nil && now.After(ds[0].LeaseUntil)
		})
		notes := subscribeNotify(t, env, f.ns, "q")
		res, err := f.client.Publish(ctxT(t), queue.PublishParams{Namespace: f.ns, Queue: "q", UniqueKey: "k"})
		if err != nil || !res.Duplicate || res.ID != holder {
			t.Fatalf("publish = %+v, %v; want a duplicate of the retried holder %s", res, err, holder)
		}
		got := notes.received(t)
		if len(got) != 1 {
			t.Fatalf("notifications %q, want one for the retried holder", got)
		}
	})
}

// notifySubscriber listens on a queue's notify channel.
type notifySubscriber struct {
	ps      *redis.PubSub
	channel string
	rdb     redis.UniversalClient
}

// subscribeNotify subscribes to the notify channel of queue ns/q and returns once Redis confirmed
// the subscription.
func subscribeNotify(t *testing.T, env *redistest.Env, ns, q string) *notifySubscriber {
	t.Helper()
	channel := env.Prefix + ":{" + ns + ":" + q + "}:notify"
	ps := env.Client.Subscribe(ctxT(t), channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctxT(t)); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return &notifySubscriber{ps: ps, channel: channel, rdb: env.Client}
}

// received returns the notifications published since the subscription: it publishes an end mark
// and reads up to it, so nothing still on its way is missed.
func (s *notifySubscriber) received(t *testing.T) []string {
	t.Helper()
	if err := s.rdb.Publish(ctxT(t), s.channel, "end").Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		msg, err := s.ps.ReceiveMessage(ctxT(t))
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if msg.Payload == "end" {
			return got
		}
		got = append(got, msg.Payload)
	}
}

// scriptCalls counts the script calls (FCALL, EVALSHA, EVAL) a client sends, alone or pipelined.
func scriptCalls() *redistest.Counter {
	return &redistest.Counter{Match: func(cmd redis.Cmder) bool {
		switch cmd.Name() {
		case "fcall", "fcall_ro", "evalsha", "evalsha_ro", "eval", "eval_ro":
			return true
		}
		return false
	}}
}

// Idle waiting costs Redis one look per wait, however long the wait: consumers blocked on empty
// queues make one consume call when they start and none while they sleep or when their wait runs
// out with nothing notified, so thousands of idle long polls do not keep Redis busy. A publish
// still wakes its queue's waiter.
func TestIdleWaitersLookOncePerWait(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		rdb, err := redisx.NewClient(env.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		calls := scriptCalls()
		rdb.AddHook(calls)
		c, err := queue.NewClient(rdb, queue.Config{Prefix: env.Prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		ctx := ctxT(t)
		const waiters = 50
		var wg sync.WaitGroup
		for i := range waiters {
			wg.Go(func() {
				got, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{fmt.Sprint("idle-", i)},
					Timeout: 300 * time.Millisecond})
				if err != nil || len(got) != 0 {
					t.Errorf("Consume on an empty queue = %d jobs, %v", len(got), err)
				}
			})
		}
		wg.Wait()
		if n := calls.Count(); n != waiters {
			t.Fatalf("%d waits that ran out made %d script calls, want one each", waiters, n)
		}

		woken := make(chan []queue.Delivery, 1)
		go func() {
			got, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"woken"}, Timeout: time.Minute})
			if err != nil {
				t.Error(err)
			}
			woken <- got
		}()
		testwait.Until(t, time.Minute, "the waiter's first look", func() bool { return calls.Count() == waiters+1 })
		testwait.Until(t, time.Minute, "the waiter's subscription", func() bool {
			return numSub(t, env, env.Prefix+":{ns:woken}:notify") == 1
		})
		f := &fixture{env: env, client: c, ns: "ns"}
		id := f.publish(t, queue.PublishParams{Queue: "woken", Payload: []byte("x")})
		if got := <-woken; len(got) != 1 || got[0].ID != id {
			t.Fatalf("the woken waiter got %+v, want job %s", got, id)
		}
	})
}
