package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/notify"
)

// An endpoint change applies on every Client before SetEndpoint (or DeleteEndpoint) returns,
// not a refresh interval later. endpoint_set.lua publishes the registry's new version on the
// settings channel and returns how many Clients are subscribed to it. Each of them drops its
// cached settings (so its next call reads the new ones) and then confirms the version
// (endpoint_applied.lua); the writer returns once as many Clients confirmed as were told, or
// after appliedWait. A Client subscribes before it first reads the settings, so no change falls
// between its read and its subscription. Nothing of this is on the hot path: a submit still
// costs one round trip.
//
// What it does not cover is covered by the refresh interval, as before: a Client whose Pub/Sub
// connection is being re-established when the change is published (go-redis resubscribes, but the
// message is lost), a Client that does not confirm within appliedWait (a process frozen for that
// long), and a change on Redis Cluster read by a Client subscribed on a replica (ReadOnly), which
// PUBLISH's count does not include.

const (
	// appliedWait bounds how long a change waits for the Clients' confirmations.
	appliedWait = 2 * time.Second
	// appliedTTL is how long the confirmations of one change are kept: past appliedWait nobody
	// reads them.
	appliedTTL = 10 * time.Second
)

// settingsWatch is a Client's subscription to endpoint changes: a Notifier of its own, so that on
// Redis Cluster its connection goes to the node of the settings channel's hash tag (go-redis
// picks the node of the first channel a Pub/Sub connection subscribes to).
type settingsWatch struct {
	id string // names this Client in the confirmations

	watched atomic.Bool
	mu      sync.Mutex // makes the subscription; guards n and closed
	n       *notify.Notifier
	closed  bool
	// confirming counts the confirmations under way; Close waits for them.
	confirming sync.WaitGroup
}

// newClientID returns a random id for a Client's confirmations.
func newClientID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// watchSettings subscribes the Client to endpoint changes, once; a failure is logged and the
// next settings read tries again (meanwhile the refresh interval applies).
func (c *Client) watchSettings(ctx context.Context) {
	sw := &c.changes
	if sw.watched.Load() {
		return
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.watched.Load() || sw.closed {
		return
	}
	if sw.n == nil {
		sw.n = notify.New(c.rdb, notify.Config{Name: "relay: endpoint changes", Logger: c.cfg.Logger})
	}
	// The waiter lives until Close ends the Notifier; its channel C is not read.
	if _, err := sw.n.Register(ctx, []string{c.ch.settings}, c.settingsChanged); err != nil {
		c.cfg.Logger.Debug("relay: subscribe to endpoint changes", slog.Any("error", err))
		return
	}
	sw.watched.Store(true)
}

// settingsChanged handles a change published by endpoint_set.lua (on the Notifier's goroutine,
// under its lock: it must not block): the cached settings are dropped at once, then the change
// is confirmed.
func (c *Client) settingsChanged(payload string) {
	c.eps.invalidate()
	v, err := strconv.ParseInt(payload, 10, 64)
	if err != nil || v <= 0 {
		return
	}
	c.changes.confirming.Add(1)
	go func() {
		defer c.changes.confirming.Done()
		ctx, cancel := context.WithTimeout(context.Background(), appliedWait)
		defer cancel()
		err := c.scripts.Run(ctx, scriptEndpointApplied, []string{c.reg.appliedKey(v)}, c.changes.id, appliedTTL.Milliseconds()).Err()
		if err != nil {
			c.cfg.Logger.Debug("relay: confirm an endpoint change", slog.Int64("version", v), slog.Any("error", err))
		}
	}()
}

// awaitApplied waits until told Clients confirmed the change that made version, at most
// appliedWait (or until ctx ends: the change is stored either way).
func (c *Client) awaitApplied(ctx context.Context, version, told int64) {
	if told <= 0 {
		return
	}
	deadline := time.Now().Add(appliedWait)
	key := c.reg.appliedKey(version)
	var n int64
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		var err error
		if n, err = c.rdb.SCard(ctx, key).Result(); err == nil && n >= told {
			return
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	c.cfg.Logger.Warn("relay: not every Client confirmed an endpoint change; the others apply it within their refresh interval",
		slog.Int64("version", version), slog.Int64("told", told), slog.Int64("confirmed", n))
}

// closeWatch ends the subscription and waits for the confirmations under way.
func (c *Client) closeWatch() {
	sw := &c.changes
	sw.mu.Lock()
	sw.closed = true
	n := sw.n
	sw.mu.Unlock()
	if n != nil {
		n.Close() // no settingsChanged runs after it
	}
	sw.confirming.Wait()
}
