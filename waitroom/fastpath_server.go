package waitroom

import (
	"cmp"
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ProxyServer serves a room's reverse proxy (Proxy) on a listener, with a lean HTTP/1.1 loop of
// its own for the common case and net/http for everything else.
//
// A room's proxy spends most of its CPU in net/http's server rather than in the room: per
// request a background read of the connection, a context and its AfterFunc, a copy of the
// response header, hand-offs between goroutines. An admitted visitor's keep-alive requests are
// plain (a GET with cookies, a small form), so every connection starts in a loop that reads such
// a request with a strict parser (fastpath_request.go), checks the visitor's pass and sends the
// request upstream from its own goroutine, with none of that. The first request it does not
// fully understand or does not serve itself (anything unusual in its framing, an upgrade, a
// visitor without a valid pass, a status poll, a pass whose keep-alive Redis no longer confirms)
// hands the connection over, with the bytes already read replayed first, to an http.Server with
// the same Proxy handler, which serves that request and the rest of the connection exactly as if
// the lean loop had never seen it.
type ProxyServer struct {
	hs      *http.Server
	lean    LeanHandler
	handoff *handoffListener

	// timeouts, from hs: the lean loop applies them as net/http would.
	readTimeout, readHeaderTimeout, writeTimeout, idleTimeout time.Duration
	errorLog                                                  *log.Logger

	mu         sync.Mutex
	listeners  map[net.Listener]struct{}
	conns      map[*leanConn]struct{}
	inShutdown atomic.Bool

	leanRequests, handedOff atomic.Int64
}

// LeanHandler is a handler the lean loop can serve a request with. ServeLean serves r on w and
// reports true, or reports false having written nothing (the header fields it set are dropped),
// and then the connection, r first, goes to net/http. Proxy's handler is one; NewLeanServer
// takes any, such as a server's own middleware around it.
type LeanHandler interface {
	ServeLean(w http.ResponseWriter, r *http.Request) bool
}

// NewProxyServer returns a server of room's proxy. hs configures it: its timeouts
// (ReadTimeout, ReadHeaderTimeout, WriteTimeout, IdleTimeout) apply to the lean loop too, its
// ErrorLog gets the panics, and it serves the connections the lean loop hands over; its Handler
// must be nil (it becomes Proxy(room)) and its Addr is not used (Serve takes a listener).
func NewProxyServer(room *Room, hs *http.Server) *ProxyServer {
	if hs == nil {
		hs = &http.Server{} //nolint:gosec // G112: the caller's choice; nil asks for no timeouts (tests, benchmarks)
	}
	h := Proxy(room)
	hs.Handler = h
	return NewLeanServer(h.(LeanHandler), hs)
}

// NewLeanServer returns a server whose lean loop serves requests with lean, and whose hs serves
// the connections lean declines (hs.Handler must then answer those requests as lean would have:
// the lean loop is a faster path to the same answers, never a different one). hs's timeouts
// apply to the lean loop too, as in NewProxyServer. A server that mounts Proxy among routes of
// its own uses it with a LeanHandler that routes a request to the proxy's ServeLean and declines
// every other.
func NewLeanServer(lean LeanHandler, hs *http.Server) *ProxyServer {
	return &ProxyServer{
		hs: hs, lean: lean, handoff: newHandoffListener(),
		readTimeout: hs.ReadTimeout, readHeaderTimeout: cmp.Or(hs.ReadHeaderTimeout, hs.ReadTimeout),
		writeTimeout: hs.WriteTimeout, idleTimeout: cmp.Or(hs.IdleTimeout, hs.ReadTimeout),
		errorLog:  hs.ErrorLog,
		listeners: make(map[net.Listener]struct{}), conns: make(map[*leanConn]struct{}),
	}
}

// ProxyServerStats counts how a ProxyServer's requests were served.
type ProxyServerStats struct {
	// LeanRequests is how many requests the lean loop served.
	LeanRequests int64
	// HandedOff is how many connections went to net/http (each with all its requests from then on).
	HandedOff int64
}

// Stats returns the server's counts since it started.
func (s *ProxyServer) Stats() ProxyServerStats {
	return ProxyServerStats{LeanRequests: s.leanRequests.Load(), HandedOff: s.handedOff.Load()}
}

// Serve accepts connections on ln until Shutdown or Close, and returns http.ErrServerClosed then.
func (s *ProxyServer) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.inShutdown.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	first := len(s.listeners) == 0
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	if first {
		s.handoff.addr = ln.Addr()
		go func() { _ = s.hs.Serve(s.handoff) }() // returns when Shutdown or Close closes it
	}
	base := context.Background()
	if s.hs.BaseContext != nil {
		base = s.hs.BaseContext(ln)
	}
	base = context.WithValue(base, http.ServerContextKey, s.hs)
	var wait time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.inShutdown.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() { // as net/http: back off and go on
				wait = min(max(2*wait, 5*time.Millisecond), time.Second)
				time.Sleep(wait)
				continue
			}
			return err
		}
		wait = 0
		lc := s.newConn(base, c)
		if lc == nil {
			_ = c.Close()
			continue
		}
		go lc.serve()
	}
}

func (s *ProxyServer) newConn(base context.Context, c net.Conn) *leanConn {
	ctx := context.WithValue(base, http.LocalAddrContextKey, c.LocalAddr())
	if s.hs.ConnContext != nil {
		ctx = s.hs.ConnContext(ctx, c)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	lc := &leanConn{s: s, c: c, cancel: cancel}
	lc.init(ctx)
	if parent.Done() != nil {
		// A context of the caller's that can end (BaseContext, ConnContext) ends the upstream
		// waits too: one AfterFunc for the connection, not one per request.
		stop := context.AfterFunc(parent, lc.interrupt.fire)
		lc.cancel = func() { stop(); cancel() }
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inShutdown.Load() {
		lc.end()
		return nil
	}
	s.conns[lc] = struct{}{}
	return lc
}

func (s *ProxyServer) forget(lc *leanConn) {
	s.mu.Lock()
	delete(s.conns, lc)
	s.mu.Unlock()
}

// handOff gives c to net/http.
func (s *ProxyServer) handOff(c net.Conn) {
	s.handedOff.Add(1)
	s.handoff.give(c)
}

// shutdownPoll is how often Shutdown looks for lean connections gone idle.
const shutdownPoll = 10 * time.Millisecond

// Shutdown stops accepting connections and waits, until ctx ends, for every request under way to
// finish: a connection between requests is closed, one serving a request is closed after its
// answer (which says Connection: close). The connections net/http serves drain by its Shutdown.
func (s *ProxyServer) Shutdown(ctx context.Context) error {
	s.closeListeners()
	hsDone := make(chan error, 1)
	go func() { hsDone <- s.hs.Shutdown(ctx) }()
	t := time.NewTicker(shutdownPoll)
	defer t.Stop()
	for s.closeIdle() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return <-hsDone
}

// Close closes the listeners and every connection at once, requests under way included.
func (s *ProxyServer) Close() error {
	s.closeListeners()
	err := s.hs.Close()
	s.mu.Lock()
	for lc := range s.conns {
		lc.end()
		_ = lc.c.Close()
	}
	s.mu.Unlock()
	return err
}

func (s *ProxyServer) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inShutdown.Store(true)
	// A connection the lean loop hands over from now on is closed (net/http's server is
	// stopping too); the ones it already took drain there.
	_ = s.handoff.Close()
	for ln := range s.listeners {
		_ = ln.Close()
	}
}

// closeIdle closes the lean connections waiting for a request and returns how many are left.
func (s *ProxyServer) closeIdle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for lc := range s.conns {
		if lc.idle.Load() {
			_ = lc.c.Close()
		}
	}
	return len(s.conns)
}

// handoffListener is the listener of the http.Server that serves the connections the lean loop
// hands over.
type handoffListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHandoffListener() *handoffListener {
	return &handoffListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// give hands c to the http.Server, or closes it when that server has stopped.
func (l *handoffListener) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// replayConn is a connection handed over: it reads the bytes the lean loop read first.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite lets net/http end a connection gracefully (a lingering close), as on a TCP one.
func (c *replayConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
