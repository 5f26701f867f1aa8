package waitroom

import (
	"context"
	"net"
	"sync"
	"time"
)

// upstreamInterrupt ends a lean request's wait on its upstream connection when the client's
// connection ends (the client left during a streamed answer, the connection closed, the server
// closed), without a context.AfterFunc per request: that costs three allocations and a lock of
// the connection's context each time. The lean loop's connection holds one, and its request
// contexts carry it (interruptOf); every other request uses context.AfterFunc as before.
type upstreamInterrupt struct {
	mu    sync.Mutex
	conn  net.Conn // the upstream connection a request waits on; nil between requests
	fired bool
	// stopFn is stop as a func value, made once (a method value made per request allocates).
	stopFn func() bool
}

type interruptKey struct{}

// interruptOf returns the interrupt of ctx's lean connection, or nil.
func interruptOf(ctx context.Context) *upstreamInterrupt {
	u, _ := ctx.Value(interruptKey{}).(*upstreamInterrupt)
	return u
}

// watch makes fire end c's wait; false when fire came first.
func (u *upstreamInterrupt) watch(c net.Conn) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.fired {
		return false
	}
	u.conn = c
	return true
}

// stop ends the watch; false when fire came meanwhile (c's deadline is then in the past).
func (u *upstreamInterrupt) stop() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.conn = nil
	return !u.fired
}

// fire ends the watched connection's wait, and every later one's.
func (u *upstreamInterrupt) fire() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.fired = true
	if u.conn != nil {
		_ = u.conn.SetDeadline(time.Unix(1, 0))
	}
}
