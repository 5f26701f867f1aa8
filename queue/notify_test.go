package queue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
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
		eventually(t, 20*time.Second, "the idle channels to be unsubscribed", func() bool {
			return numSub(t, env, channels...) == 0
		})

		got := make(chan []queue.Delivery, 1)
		go func() {
			ds, _ := f.client.Consume(ctxT(t), queue.ConsumeParams{Namespace: f.ns, Queues: []string{"q0"}, Timeout: 30 * time.Second})
			got <- ds
		}()
		eventually(t, 5*time.Second, "the consumer to subscribe again", func() bool {
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
