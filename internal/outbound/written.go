package outbound

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"
)

// writeWatchedConn is every connection a Sender dials: it can tell a caller when the next bytes
// have been handed to the kernel (NotifyNextWrite).
type writeWatchedConn struct {
	net.Conn
	next atomic.Pointer[func(time.Time)]
}

func (c *writeWatchedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if f := c.next.Swap(nil); f != nil {
		(*f)(time.Now())
	}
	return n, err
}

// dialWatched dials with d and wraps the connection so that NotifyNextWrite can watch it.
func dialWatched(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &writeWatchedConn{Conn: c}, nil
	}
}

// NotifyNextWrite calls f, once, with the time the next write on conn returned: when the bytes
// written last had left the process. conn is a connection of a Sender's call, as
// httptrace.GotConnInfo gives it (a TLS connection is looked through). An HTTP/1 call writes
// nothing on its connection between GotConn and its own request, so registering in GotConn
// times the request's first bytes, which net/http's WroteRequest does not: it fires before the
// transport flushes its buffer, and the goroutine that flushes can be held up for milliseconds on
// a busy machine. (On an HTTP/2 connection, another call's frames may be the next write.)
// false: conn is not a Sender's, and f will not be called.
func NotifyNextWrite(conn net.Conn, f func(time.Time)) bool {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	c, ok := conn.(*writeWatchedConn)
	if !ok {
		return false
	}
	c.next.Store(&f)
	return true
}
