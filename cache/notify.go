package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// notifier wakes goroutines waiting for another load of a key. One PSUBSCRIBE per Store covers
// every key's channel; waiters register for a channel in process memory, so registering costs no
// round trip. A waiter registers before it re-checks the record, and the subscription is confirmed
// before the first registration, so a write published after the re-check is never missed. A write
// published while the subscription reconnects can be missed; waits are bounded by the lock's expiry,
// after which the waiter checks again.
type notifier struct {
	rdb     redis.UniversalClient
	pattern string

	mu      sync.Mutex
	ps      *redis.PubSub
	done    chan struct{}
	closed  bool
	waiters map[string]map[*waiter]struct{}
}

type waiter struct {
	n       *notifier
	channel string
	c       chan struct{}
}

func newNotifier(rdb redis.UniversalClient, pattern string) *notifier {
	return &notifier{rdb: rdb, pattern: pattern, waiters: make(map[string]map[*waiter]struct{})}
}

// watch registers a waiter for channel, subscribing first if the Store has not yet.
func (n *notifier) watch(ctx context.Context, channel string) (*waiter, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	if n.ps == nil {
		if err := n.start(ctx); err != nil {
			return nil, err
		}
	}
	w := &waiter{n: n, channel: channel, c: make(chan struct{}, 1)}
	set := n.waiters[channel]
	if set == nil {
		set = make(map[*waiter]struct{})
		n.waiters[channel] = set
	}
	set[w] = struct{}{}
	return w, nil
}

// subscribeTimeout bounds the first subscription (the caller's context may have no deadline).
const subscribeTimeout = 5 * time.Second

// start subscribes and waits for the confirmation. n.mu is held.
func (n *notifier) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	ps := n.rdb.PSubscribe(ctx, n.pattern)
	msg, err := ps.Receive(ctx)
	if err != nil {
		_ = ps.Close()
		return fmt.Errorf("cache: subscribe: %w", err)
	}
	if _, ok := msg.(*redis.Subscription); !ok {
		_ = ps.Close()
		return fmt.Errorf("cache: subscribe: unexpected reply %T", msg)
	}
	n.ps = ps
	n.done = make(chan struct{})
	go n.dispatch(ps.Channel(redis.WithChannelSize(1024)), n.done)
	return nil
}

func (n *notifier) dispatch(ch <-chan *redis.Message, done chan struct{}) {
	defer close(done)
	for msg := range ch {
		n.mu.Lock()
		for w := range n.waiters[msg.Channel] {
			select {
			case w.c <- struct{}{}:
			default:
			}
		}
		n.mu.Unlock()
	}
}

// stop unregisters the waiter.
func (w *waiter) stop() {
	n := w.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if set := n.waiters[w.channel]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(n.waiters, w.channel)
		}
	}
}

// close unsubscribes and waits for the dispatcher to end.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	ps, done := n.ps, n.done
	n.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
		<-done
	}
}
