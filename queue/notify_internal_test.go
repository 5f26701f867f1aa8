package queue

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// With channels unsubscribed as soon as they are idle, waiters keep registering while an
// UNSUBSCRIBE of their channel is on its way: each must still be confirmed subscribed only once
// Redis has its new SUBSCRIBE, so that no publish after its check of the queue goes unnoticed.
// WakeupInterval is long, so a lost wake-up shows as a consumer that times out empty.
func TestNotifierNoLostWakeupWhileUnsubscribing(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, err := NewClient(env.Client, Config{Prefix: env.Prefix, WakeupInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		c.notify.idle = time.Millisecond // before the first register starts the receive loop
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		const rounds, queues = 100, 3
		for round := range rounds {
			var wg sync.WaitGroup
			for i := range queues {
				q := string(rune('a' + i))
				wg.Go(func() {
					ds, err := c.Consume(ctx, ConsumeParams{Namespace: "ns", Queues: []string{q}, Timeout: 10 * time.Second})
					if err != nil || len(ds) != 1 {
						t.Errorf("round %d: Consume(%s) = %d jobs, %v; want the job published", round, q, len(ds), err)
						return
					}
					if err := c.Ack(ctx, AckParams{Namespace: "ns", Queue: q, ID: ds[0].ID, Delivery: ds[0].Delivery}); err != nil {
						t.Errorf("Ack: %v", err)
					}
				})
				if round%2 == 1 {
					// Publish once the consumer waits (or is about to check the queue), so that
					// mostly the notification, not its own check, gets it the job.
					ch := newQueueKeys(env.Prefix, "ns", q).channel
					for deadline := time.Now().Add(10 * time.Second); !c.notify.hasWaiter(ch); {
						if time.Now().After(deadline) {
							t.Fatalf("round %d: the consumer of %s never waited", round, q)
						}
						time.Sleep(50 * time.Microsecond)
					}
				}
				if _, err := c.Publish(ctx, PublishParams{Namespace: "ns", Queue: q}); err != nil {
					t.Fatalf("Publish: %v", err)
				}
			}
			wg.Wait()
			if t.Failed() {
				return
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for c.notify.subscribed() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d channels still subscribed with nobody waiting", c.notify.subscribed())
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// hasWaiter reports whether a waiter is registered for the channel.
func (n *notifier) hasWaiter(ch string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.subs[ch]
	return s != nil && len(s.waiters) > 0
}
