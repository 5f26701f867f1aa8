package queue

import (
	"context"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"
)

// notifier wakes blocked consumers when a script PUBLISHes that jobs became ready (or that a new
// earliest delayed job was scheduled). One Pub/Sub connection serves every consumer of a Client.
//
// A consumer registers as a waiter (and the channel is confirmed subscribed) before it checks the
// queue, so a publish that lands between the check and the wait is never missed.
type notifier struct {
	rdb redis.UniversalClient
	log *slog.Logger

	mu        sync.Mutex
	ps        *redis.PubSub
	confirmed map[string]chan struct{} // channel -> closed once the subscription is confirmed
	waiters   map[string]map[*waiter]struct{}
	closed    bool
	closing   chan struct{} // closed by close: ends waits for subscription confirmations
	done      chan struct{} // closed when the receive loop ends
}

// waiter is one blocked consumer: C gets a value when any of its channels is notified.
type waiter struct {
	C        chan struct{}
	channels []string
}

func newNotifier(rdb redis.UniversalClient, log *slog.Logger) *notifier {
	return &notifier{
		rdb:       rdb,
		log:       log,
		confirmed: make(map[string]chan struct{}),
		waiters:   make(map[string]map[*waiter]struct{}),
		closing:   make(chan struct{}),
	}
}

// register returns a waiter for the channels once every channel is subscribed.
func (n *notifier) register(ctx context.Context, channels []string) (*waiter, error) {
	w := &waiter{C: make(chan struct{}, 1), channels: channels}
	var pending []chan struct{}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errClosed
	}
	var subscribe []string
	for _, ch := range channels {
		if n.waiters[ch] == nil {
			n.waiters[ch] = make(map[*waiter]struct{})
		}
		n.waiters[ch][w] = struct{}{}
		c, ok := n.confirmed[ch]
		if !ok {
			c = make(chan struct{})
			n.confirmed[ch] = c
			subscribe = append(subscribe, ch)
		}
		pending = append(pending, c)
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
		go n.receive(n.ps, n.done)
		return nil
	}
	if err := n.ps.Subscribe(ctx, channels...); err != nil {
		for _, ch := range channels {
			delete(n.confirmed, ch)
		}
		return err
	}
	return nil
}

func (n *notifier) unregister(w *waiter) {
	n.mu.Lock()
	for _, ch := range w.channels {
		delete(n.waiters[ch], w)
	}
	n.mu.Unlock()
}

// receive dispatches subscription confirmations and notifications until the Pub/Sub is closed.
// go-redis reconnects and resubscribes by itself; a notification lost meanwhile is covered by the
// consumers' WakeupInterval.
func (n *notifier) receive(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	for msg := range ps.ChannelWithSubscriptions() {
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			n.mu.Lock()
			if c, ok := n.confirmed[m.Channel]; ok {
				select {
				case <-c:
				default:
					close(c)
				}
			}
			n.mu.Unlock()
		case *redis.Message:
			n.mu.Lock()
			for w := range n.waiters[m.Channel] {
				select {
				case w.C <- struct{}{}:
				default:
				}
			}
			n.mu.Unlock()
		}
	}
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
	for _, ws := range n.waiters {
		for w := range ws {
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
