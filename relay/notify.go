package relay

import (
	"context"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"
)

// notifier wakes waiters (Wait calls, dispatchers) when a script PUBLISHes on their channels. One
// Pub/Sub connection serves every waiter of a Client.
//
// A waiter is registered, and its channels confirmed subscribed, before it reads the state it
// waits on, so a PUBLISH between the read and the wait is never missed. A channel is
// unsubscribed when its last waiter leaves, but only once its SUBSCRIBE was confirmed: then the
// next confirmation for that channel always answers a later SUBSCRIBE (see queue's notifier).
type notifier struct {
	rdb redis.UniversalClient
	log *slog.Logger

	mu      sync.Mutex
	ps      *redis.PubSub
	subs    map[string]*subscription
	closed  bool
	closing chan struct{}
	done    chan struct{}
}

type subscription struct {
	waiters   map[*waiter]struct{}
	confirmed chan struct{}
}

// waiter is one registration: C gets a value when any of its channels is notified (and when
// the notifier closes).
type waiter struct {
	C        chan struct{}
	channels []string
	n        *notifier
	// fn, when set, gets every message's payload first. It runs under the notifier's lock and
	// must not block.
	fn func(payload string)
}

func newNotifier(rdb redis.UniversalClient, log *slog.Logger) *notifier {
	return &notifier{rdb: rdb, log: log, subs: make(map[string]*subscription), closing: make(chan struct{})}
}

// register returns a waiter once every channel is subscribed. Call waiter.stop when done.
func (n *notifier) register(ctx context.Context, channels []string, fn func(string)) (*waiter, error) {
	w := &waiter{C: make(chan struct{}, 1), channels: channels, n: n, fn: fn}
	pending := make([]chan struct{}, 0, len(channels))
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
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
		w.stop(ctx)
		return nil, err
	}
	for _, c := range pending {
		select {
		case <-c:
		case <-ctx.Done():
			w.stop(ctx)
			return nil, ctx.Err()
		case <-n.closing:
			w.stop(ctx)
			return nil, ErrClosed
		}
	}
	return w, nil
}

func (n *notifier) subscribeLocked(ctx context.Context, channels []string) error {
	if n.ps == nil {
		// The subscription outlives any one waiter: it is not tied to the caller's context.
		n.ps = n.rdb.Subscribe(context.WithoutCancel(ctx), channels...)
		n.done = make(chan struct{})
		go n.receive(n.ps, n.done) //nolint:contextcheck // the notifier's own loop, which close ends
		return nil
	}
	if err := n.ps.Subscribe(ctx, channels...); err != nil {
		for _, ch := range channels {
			delete(n.subs, ch)
		}
		_ = n.ps.Unsubscribe(context.WithoutCancel(ctx), channels...)
		return err
	}
	return nil
}

// stop unregisters the waiter; channels left without waiters are unsubscribed (even when ctx,
// the waiter's caller's, has ended).
func (w *waiter) stop(ctx context.Context) {
	n := w.n
	n.mu.Lock()
	defer n.mu.Unlock()
	var idle []string
	for _, ch := range w.channels {
		s := n.subs[ch]
		if s == nil {
			continue
		}
		delete(s.waiters, w)
		if len(s.waiters) == 0 && isClosed(s.confirmed) {
			delete(n.subs, ch)
			idle = append(idle, ch)
		}
	}
	if len(idle) > 0 && !n.closed && n.ps != nil {
		if err := n.ps.Unsubscribe(context.WithoutCancel(ctx), idle...); err != nil {
			n.log.Debug("relay: unsubscribe", slog.Any("error", err))
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (n *notifier) receive(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	for msg := range ps.ChannelWithSubscriptions() {
		n.dispatch(msg)
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
		s := n.subs[m.Channel]
		if s == nil || isClosed(s.confirmed) {
			return
		}
		close(s.confirmed)
		if len(s.waiters) == 0 && !n.closed {
			// Its waiters left before the confirmation: unsubscribe now that it is safe.
			delete(n.subs, m.Channel)
			_ = n.ps.Unsubscribe(context.Background(), m.Channel)
		}
	case *redis.Message:
		if s := n.subs[m.Channel]; s != nil {
			for w := range s.waiters {
				if w.fn != nil {
					w.fn(m.Payload)
				}
				select {
				case w.C <- struct{}{}:
				default:
				}
			}
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
		_ = ps.Close()
		<-done
	}
}

func (n *notifier) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}
