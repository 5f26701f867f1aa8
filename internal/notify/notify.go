// Package notify wakes waiters when a Redis script PUBLISHes on their channels: one Pub/Sub
// connection serves every waiter of a client. Package queue wakes blocked consumers with it, and
// package relay its dispatchers and the callers waiting for a task.
package notify

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned by Register once the Notifier is closed.
var ErrClosed = errors.New("notify: closed")

// Config configures a Notifier.
type Config struct {
	// Idle is how long a channel stays subscribed after its last waiter left. A client that waits
	// on the same channel again soon (a consumer calling in a loop) then pays no SUBSCRIBE and
	// UNSUBSCRIBE per wait, nor the round trip of a confirmation; an idle channel costs one
	// message per notification. Default 0: unsubscribed as soon as its last waiter leaves.
	Idle time.Duration
	// Name starts the Notifier's log messages ("queue", "relay"). Default "notify".
	Name string
	// Logger receives the Notifier's debug logs. Default slog.Default().
	Logger *slog.Logger
}

// Notifier wakes waiters when their channels are notified.
//
// A waiter registers (and its channels are confirmed subscribed) before it reads the state it
// waits on, so a publish that lands between the read and the wait is never missed.
//
// A channel without waiters is unsubscribed (after Config.Idle), so a client that waited once on
// many channels does not keep receiving their notifications. The UNSUBSCRIBE is sent in the same
// critical section that removes the channel from subs, and only once its SUBSCRIBE is confirmed. A
// waiter that comes for the channel afterwards adds a new entry and sends a new SUBSCRIBE, which
// Redis gets after the UNSUBSCRIBE (both are written under mu on the one connection). As no
// SUBSCRIBE of the channel was still unanswered when the UNSUBSCRIBE was sent, the next
// "subscribe" reply for it answers the new SUBSCRIBE: a channel is never reported subscribed on
// the strength of a reply from before an UNSUBSCRIBE. When go-redis reconnects, it resubscribes by
// itself; the confirmation of that resubscription wakes the channel's waiters, since a
// notification may have been lost while the connection was down. The waiters' own wake-up
// interval is then only a last resort, so it can be long and idle waiting costs Redis nothing.
type Notifier struct {
	rdb  redis.UniversalClient
	log  *slog.Logger
	name string
	idle time.Duration

	mu      sync.Mutex
	ps      *redis.PubSub
	subs    map[string]*subscription
	closed  bool
	closing chan struct{} // closed by Close: ends waits for subscription confirmations
	done    chan struct{} // closed when the receive loop ends
	sweep   chan struct{} // without Idle: a channel lost its last waiter, the receive loop sweeps
}

// subscription is one subscribed (or subscribing) channel.
type subscription struct {
	waiters   map[*Waiter]struct{}
	confirmed chan struct{} // closed once Redis confirmed the SUBSCRIBE
	idleSince time.Time     // when the last waiter left; meaningless while there are waiters
}

// Waiter is one registration: C gets a value when any of its channels is notified, and when the
// Notifier closes.
type Waiter struct {
	C        chan struct{}
	channels []string
	n        *Notifier
	// fn, when set, gets every message's payload first. It runs under the notifier's lock and
	// must not block.
	fn func(payload string)
	// resubscribed counts the subscription's returns after a lost connection (see Resubscribed).
	resubscribed atomic.Uint64
}

// Resubscribed counts how often the subscription came back after a lost connection. A waiter that
// keys its work on payloads (fn) learns from a change of it that payloads may have been lost
// meanwhile and everything must be looked at again; C is signalled as well.
func (w *Waiter) Resubscribed() uint64 { return w.resubscribed.Load() }

// New returns a Notifier on rdb. It subscribes at the first Register.
func New(rdb redis.UniversalClient, cfg Config) *Notifier {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.Name = cmp.Or(cfg.Name, "notify")
	return &Notifier{
		rdb:     rdb,
		log:     cfg.Logger,
		name:    cfg.Name,
		idle:    cfg.Idle,
		subs:    make(map[string]*subscription),
		closing: make(chan struct{}),
		sweep:   make(chan struct{}, 1),
	}
}

// Register returns a waiter for the channels once every channel is subscribed; fn, when not nil,
// gets the payload of every message on them (under the Notifier's lock: it must not block). Call
// Waiter.Stop when done.
func (n *Notifier) Register(ctx context.Context, channels []string, fn func(payload string)) (*Waiter, error) {
	w := &Waiter{C: make(chan struct{}, 1), channels: channels, n: n, fn: fn}
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
			s = &subscription{waiters: make(map[*Waiter]struct{}), confirmed: make(chan struct{})}
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
		w.Stop()
		return nil, err
	}
	for _, c := range pending {
		select {
		case <-c:
		case <-ctx.Done():
			w.Stop()
			return nil, ctx.Err()
		case <-n.closing:
			w.Stop()
			return nil, ErrClosed
		}
	}
	return w, nil
}

func (n *Notifier) subscribeLocked(ctx context.Context, channels []string) error {
	if n.ps == nil {
		// The subscription outlives any one waiter: it is not tied to the caller's context.
		n.ps = n.rdb.Subscribe(context.WithoutCancel(ctx), channels...)
		n.done = make(chan struct{})
		go n.receive(n.ps, n.done) //nolint:contextcheck // the notifier's own loop, which Close ends
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

// Stop unregisters the waiter. Without Config.Idle, its channels left without waiters are
// unsubscribed right away, by the receive loop (those whose SUBSCRIBE is still unconfirmed when
// the confirmation comes).
func (w *Waiter) Stop() {
	n := w.n
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	idle := false
	for _, ch := range w.channels {
		s := n.subs[ch]
		if s == nil {
			continue
		}
		if _, ok := s.waiters[w]; !ok {
			continue
		}
		delete(s.waiters, w)
		if len(s.waiters) > 0 {
			continue
		}
		s.idleSince = now
		idle = true
	}
	if idle && n.idle == 0 {
		select {
		case n.sweep <- struct{}{}:
		default:
		}
	}
}

// unsubscribeLocked unsubscribes channels already removed from subs, in one command.
func (n *Notifier) unsubscribeLocked(channels []string) {
	if len(channels) == 0 || n.closed || n.ps == nil {
		return
	}
	// go-redis forgets the channels even when the write fails, so a reconnect does not bring them
	// back; the error only means the connection is being replaced.
	if err := n.ps.Unsubscribe(context.Background(), channels...); err != nil {
		n.log.Debug(n.name+": unsubscribe idle channels", slog.Int("channels", len(channels)), slog.Any("error", err))
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

// receive dispatches subscription confirmations and notifications until the Pub/Sub is closed,
// and unsubscribes the channels left without waiters (after Config.Idle).
func (n *Notifier) receive(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	msgs := ps.ChannelWithSubscriptions()
	var sweep <-chan time.Time
	if n.idle > 0 {
		t := time.NewTicker(max(n.idle/2, time.Millisecond))
		defer t.Stop()
		sweep = t.C
	}
	for {
		select {
		case msg, ok := <-msgs:
			if !ok {
				return
			}
			n.dispatch(msg)
		case now := <-sweep:
			n.unsubscribeIdle(now)
		case <-n.sweep:
			n.unsubscribeIdle(time.Now())
		}
	}
}

func (n *Notifier) dispatch(msg any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch m := msg.(type) {
	case *redis.Subscription:
		if m.Kind != "subscribe" {
			return
		}
		s := n.subs[m.Channel]
		if s == nil {
			return
		}
		if isClosed(s.confirmed) {
			// A second confirmation of a channel is go-redis resubscribing on a new connection:
			// notifications published while the old one was gone are lost, so every waiter on the
			// channel looks again now rather than at its own wake-up interval.
			s.wake(nil)
			return
		}
		close(s.confirmed)
		if n.idle == 0 && len(s.waiters) == 0 {
			// Its waiters left before the confirmation: unsubscribe now that it is safe.
			delete(n.subs, m.Channel)
			n.unsubscribeLocked([]string{m.Channel})
		}
	case *redis.Message:
		if s := n.subs[m.Channel]; s != nil {
			s.wake(&m.Payload)
		}
	}
}

// wake signals every waiter of the subscription, handing payload (when not nil) to those that
// read payloads. The caller holds the Notifier's lock.
func (s *subscription) wake(payload *string) {
	for w := range s.waiters {
		if payload == nil {
			w.resubscribed.Add(1)
		}
		if w.fn != nil && payload != nil {
			w.fn(*payload)
		}
		select {
		case w.C <- struct{}{}:
		default:
		}
	}
}

// unsubscribeIdle unsubscribes, in one command, the channels that have had no waiter for
// Config.Idle and whose subscription is confirmed (see Notifier for why an unconfirmed one waits).
func (n *Notifier) unsubscribeIdle(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var idle []string
	for ch, s := range n.subs {
		if len(s.waiters) > 0 || now.Sub(s.idleSince) < n.idle || !isClosed(s.confirmed) {
			continue
		}
		delete(n.subs, ch)
		idle = append(idle, ch)
	}
	n.unsubscribeLocked(idle)
}

// Subscribed returns the number of channels subscribed or being subscribed.
func (n *Notifier) Subscribed() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.subs)
}

// Close ends the subscription and wakes every waiter; Register fails with ErrClosed after it.
func (n *Notifier) Close() {
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
			n.log.Debug(n.name+": close pubsub", slog.Any("error", err))
		}
		<-done
	}
}

// Closed reports whether the waiter's Notifier was closed (which also wakes the waiter).
func (w *Waiter) Closed() bool { return w.n.Closed() }

// Closed reports whether Close was called.
func (n *Notifier) Closed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}
