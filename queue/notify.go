package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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
// earliest delayed job was scheduled). One Pub/Sub connection serves every consumer of a Client.
//
// A consumer registers as a waiter (and the channel is confirmed subscribed) before it checks the
// queue, so a publish that lands between the check and the wait is never missed.
//
// A channel nobody has waited on for idle is unsubscribed, so a Client that waited once on many
// queues does not keep receiving their notifications. The UNSUBSCRIBE is sent in the same critical
// section that removes the channel from subs, and only once its SUBSCRIBE is confirmed. A waiter that
// comes for the channel afterwards adds a new entry and sends a new SUBSCRIBE, which Redis gets after
// the UNSUBSCRIBE (both are written under mu on the one connection). As no SUBSCRIBE of the channel
// was still unanswered when the UNSUBSCRIBE was sent, the next "subscribe" reply for it answers the
// new SUBSCRIBE: a channel is never reported subscribed on the strength of a reply from before an
// UNSUBSCRIBE. When go-redis reconnects, it resubscribes by itself; a notification lost meanwhile is
// covered by the consumers' WakeupInterval, as it always was.
type notifier struct {
	rdb  redis.UniversalClient
	log  *slog.Logger
	idle time.Duration // idleUnsubscribe; tests shorten it before the first register

	mu      sync.Mutex
	ps      *redis.PubSub
	subs    map[string]*subscription
	closed  bool
	closing chan struct{} // closed by close: ends waits for subscription confirmations
	done    chan struct{} // closed when the receive loop ends
}

// subscription is one subscribed (or subscribing) channel.
type subscription struct {
	waiters   map[*waiter]struct{}
	confirmed chan struct{} // closed once Redis confirmed the SUBSCRIBE
	idleSince time.Time     // when the last waiter left; meaningless while there are waiters
}

// waiter is one blocked consumer: C gets a value when any of its channels is notified.
type waiter struct {
	C        chan struct{}
	channels []string
}

func newNotifier(rdb redis.UniversalClient, log *slog.Logger) *notifier {
	return &notifier{
		rdb:     rdb,
		log:     log,
		idle:    idleUnsubscribe,
		subs:    make(map[string]*subscription),
		closing: make(chan struct{}),
	}
}

// register returns a waiter for the channels once every channel is subscribed.
func (n *notifier) register(ctx context.Context, channels []string) (*waiter, error) {
	w := &waiter{C: make(chan struct{}, 1), channels: channels}
	pending := make([]chan struct{}, 0, len(channels))
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errClosed
	}
	var subscribe []string
	for _, ch := range channels {
		s := n.subs[ch]
		if s == nil {
			s = &subscription{waiters: make(map[*waiter]struct{}), confirmed: make(chan struct{})}
			n.subs[ch] = s
			subscribe = append(subscribe, ch)
		}
		s.waiters[w] = struct{}{}
		pending = append(pending, s.confirmed)
	}
	var err error
	if len(subscribe) > 0 {
		err = n.subscribeLocked(ctx, subscribe)
	}
	n.mu.Unlock()
	if err != nil {
		n.unregister(w)
		return nil, err
	}
	for _, c := range pending {
		select {
		case <-c:
		case <-ctx.Done():
			n.unregister(w)
			return nil, ctx.Err()
		case <-n.closing:
			n.unregister(w)
			return nil, errClosed
		}
	}
	return w, nil
}

func (n *notifier) subscribeLocked(ctx context.Context, channels []string) error {
	if n.ps == nil {
		// The subscription outlives any one consumer: it is not tied to the caller's context.
		n.ps = n.rdb.Subscribe(context.WithoutCancel(ctx), channels...)
		n.done = make(chan struct{})
		go n.receive(n.ps, n.done) //nolint:contextcheck // the notifier's own loop, which close ends
		return nil
	}
	if err := n.ps.Subscribe(ctx, channels...); err != nil {
		// Forget the channels here and in go-redis (which keeps them to resubscribe on reconnect),
		// so that the next waiter subscribes afresh.
		for _, ch := range channels {
			delete(n.subs, ch)
		}
		_ = n.ps.Unsubscribe(context.WithoutCancel(ctx), channels...)
		return err
	}
	return nil
}

func (n *notifier) unregister(w *waiter) {
	n.mu.Lock()
	now := time.Now()
	for _, ch := range w.channels {
		s := n.subs[ch]
		if s == nil {
			continue
		}
		if _, ok := s.waiters[w]; !ok {
			continue
		}
		delete(s.waiters, w)
		if len(s.waiters) == 0 {
			s.idleSince = now
		}
	}
	n.mu.Unlock()
}

// receive dispatches subscription confirmations and notifications until the Pub/Sub is closed, and
// unsubscribes the channels that stayed idle. go-redis reconnects and resubscribes by itself; a
// notification lost meanwhile is covered by the consumers' WakeupInterval.
func (n *notifier) receive(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	msgs := ps.ChannelWithSubscriptions()
	sweep := time.NewTicker(max(n.idle/2, time.Millisecond))
	defer sweep.Stop()
	for {
		select {
		case msg, ok := <-msgs:
			if !ok {
				return
			}
			n.dispatch(msg)
		case now := <-sweep.C:
			n.unsubscribeIdle(ps, now)
		}
	}
}

func (n *notifier) dispatch(msg any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch m := msg.(type) {
	case *redis.Subscription:
		if m.Kind != "subscribe" {
			return
		}
		if s := n.subs[m.Channel]; s != nil {
			select {
			case <-s.confirmed:
			default:
				close(s.confirmed)
			}
		}
	case *redis.Message:
		if s := n.subs[m.Channel]; s != nil {
			for w := range s.waiters {
				select {
				case w.C <- struct{}{}:
				default:
				}
			}
		}
	}
}

// unsubscribeIdle unsubscribes, in one command, the channels that have had no waiter for n.idle
// and whose subscription is confirmed (see notifier for why an unconfirmed one waits).
func (n *notifier) unsubscribeIdle(ps *redis.PubSub, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	var idle []string
	for ch, s := range n.subs {
		if len(s.waiters) > 0 || now.Sub(s.idleSince) < n.idle {
			continue
		}
		select {
		case <-s.confirmed:
		default:
			continue
		}
		delete(n.subs, ch)
		idle = append(idle, ch)
	}
	if len(idle) == 0 {
		return
	}
	// go-redis forgets the channels even when the write fails, so a reconnect does not bring them
	// back; the error only means the connection is being replaced.
	if err := ps.Unsubscribe(context.Background(), idle...); err != nil {
		n.log.Debug("queue: unsubscribe idle channels", slog.Int("channels", len(idle)), slog.Any("error", err))
	}
}

// subscribed returns the number of channels subscribed or being subscribed.
func (n *notifier) subscribed() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs)
}

// close ends the subscription and wakes every waiter.
func (n *notifier) close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.closing)
	ps, done := n.ps, n.done
	for _, s := range n.subs {
		for w := range s.waiters {
			select {
			case w.C <- struct{}{}:
			default:
			}
		}
	}
	n.mu.Unlock()
	if ps != nil {
		if err := ps.Close(); err != nil {
			n.log.Debug("queue: close pubsub", slog.Any("error", err))
		}
		<-done
	}
}

func (n *notifier) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}
