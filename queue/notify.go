package queue

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/notify"
)

// idleUnsubscribe is how long a channel stays subscribed after its last waiter left.
//
// Unsubscribing at once would cost the most common consumer, one that calls Consume (or a worker
// that fetches) in a loop and comes back within milliseconds, a SUBSCRIBE and an UNSUBSCRIBE per
// call, and a round trip before each call first checks its queue, since a waiter waits for the
// SUBSCRIBE to be confirmed. Keeping an idle channel costs one Pub/Sub message per notification on
// it. Two seconds covers consumers that come back after handling a job of up to that long; a slower
// one pays the round trip at most once per job, which is small next to the job.
const idleUnsubscribe = 2 * time.Second

// notifier wakes blocked consumers when a script PUBLISHes that jobs became ready (or that a new
// earliest delayed job was scheduled): one Pub/Sub connection serves every consumer of a Client
// (internal/notify). A notification lost while the subscription reconnects is covered by the
// consumers' WakeupInterval.
type notifier struct{ n *notify.Notifier }

// waiter is one blocked consumer: C gets a value when any of its channels is notified.
type waiter = notify.Waiter

func newNotifier(rdb redis.UniversalClient, log *slog.Logger) *notifier {
	return &notifier{n: notify.New(rdb, notify.Config{Idle: idleUnsubscribe, Name: "queue", Logger: log})}
}

// register returns a waiter for the channels once every channel is subscribed.
func (n *notifier) register(ctx context.Context, channels []string) (*waiter, error) {
	w, err := n.n.Register(ctx, channels, nil)
	if errors.Is(err, notify.ErrClosed) {
		return nil, errClosed
	}
	return w, err
}

func (n *notifier) unregister(w *waiter) { w.Stop() }

// close ends the subscription and wakes every waiter.
func (n *notifier) close() { n.n.Close() }

func (n *notifier) isClosed() bool { return n.n.Closed() }
