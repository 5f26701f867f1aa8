package waitroom

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"
)

// leanConn is one client connection in the lean loop.
type leanConn struct {
	s         *ProxyServer
	c         net.Conn
	cancel    context.CancelFunc // ends the connection's context: call end instead
	interrupt upstreamInterrupt  // ends a request's wait on its upstream with the context
	// idle is true while the connection waits for a request with nothing read: Shutdown may
	// close it then.
	idle atomic.Bool

	buf  []byte // what was read and not yet served: buf[r:w]
	r, w int
	out  *bufio.Writer

	parsed leanRequest
	strs   []string
	base   *http.Request // carries the connection's context; each request is a copy of it
	req    http.Request
	body   bytes.Reader
	writer leanWriter
	remote string

	// readDeadline and writeDeadline are the deadlines set on c (zero: none); idleDeadline is set
	// while the read deadline is the idle wait's (fastpath_deadline.go).
	readDeadline, writeDeadline time.Time
	idleDeadline                bool
	writeSpan                   time.Duration // how far ahead writeDeadline was when it was set

	dateSec int64
	dateStr string

	// watch is the read that notices a client leaving during a streamed answer (watchClient).
	watch     chan struct{}
	watchByte [1]byte
	watchN    int
}

// leanBufSize is the connection's first read buffer; it grows, up to a header's and a body's
// bounds, only for a request that needs it.
const leanBufSize = 4 << 10

// end ends the connection's context, and the wait of a request on its upstream.
func (lc *leanConn) end() {
	lc.cancel()
	lc.interrupt.fire()
}

func (lc *leanConn) init(ctx context.Context) {
	ctx = context.WithValue(ctx, interruptKey{}, &lc.interrupt)
	lc.interrupt.stopFn = lc.interrupt.stop
	lc.buf = make([]byte, leanBufSize)
	lc.out = bufio.NewWriterSize(lc.c, leanBufSize)
	lc.parsed.header = make(http.Header, 16)
	lc.strs = make([]string, 0, 32)
	lc.writer.header = make(http.Header, 16)
	lc.writer.pending = make([]byte, 0, pendingBody)
	lc.remote = lc.c.RemoteAddr().String()
	lc.base = (&http.Request{}).WithContext(ctx)
}

func (lc *leanConn) closing() bool { return lc.s.inShutdown.Load() }

// date is the Date field's value, formatted once a second.
func (lc *leanConn) date() string {
	now := time.Now()
	if sec := now.Unix(); sec != lc.dateSec {
		lc.dateSec, lc.dateStr = sec, now.UTC().Format(http.TimeFormat)
	}
	return lc.dateStr
}

// serve runs the lean loop until the connection ends or goes to net/http.
func (lc *leanConn) serve() {
	handedOff := false
	defer func() {
		lc.end()
		lc.s.forget(lc)
		if !handedOff {
			_ = lc.c.Close()
		}
	}()
	for {
		outcome := lc.readRequest()
		if outcome == leanMore { // the connection ended or timed out between or within requests
			return
		}
		if outcome == leanOK {
			var served bool
			served, outcome = lc.serveRequest()
			if served {
				if outcome == leanOK && !lc.closing() {
					continue
				}
				return
			}
		}
		// leanHandOff: net/http reads the request from its first byte.
		lc.idle.Store(false)
		_ = lc.c.SetDeadline(time.Time{})
		handedOff = true
		lc.s.handOff(&replayConn{Conn: lc.c, pending: bytes.Clone(lc.buf[lc.r:lc.w])})
		return
	}
}

// readRequest reads until a whole request is parsed (leanOK), the request is not the lean
// loop's (leanHandOff), or the connection ended (leanMore).
func (lc *leanConn) readRequest() leanOutcome {
	s := lc.s
	var headerBy time.Time // the header's bound, set on the connection once a read must wait for more of it
	for first := true; ; first = false {
		if lc.r == lc.w {
			lc.r, lc.w = 0, 0
			if first {
				lc.idle.Store(true)
				lc.setIdleDeadline()
			}
		} else {
			outcome := parseLeanRequest(lc.buf[lc.r:lc.w], &lc.parsed, &lc.strs)
			if outcome == leanOK {
				return lc.readBody()
			}
			if outcome == leanHandOff {
				return leanHandOff
			}
		}
		if !headerBy.IsZero() {
			lc.setReadDeadline(headerBy)
			headerBy = time.Time{}
		}
		if !lc.fill() {
			if lc.r < lc.w {
				return leanHandOff // a partial request, then an error: net/http answers it as it would
			}
			return leanMore
		}
		if lc.idle.Load() {
			lc.idle.Store(false)
			if s.readHeaderTimeout > 0 {
				headerBy = time.Now().Add(s.readHeaderTimeout)
			}
		}
	}
}

// readBody makes sure the parsed request's body is in the buffer.
func (lc *leanConn) readBody() leanOutcome {
	need := lc.parsed.headerLen + int(lc.parsed.contentLength)
	if need > lc.w-lc.r && lc.s.readTimeout > 0 {
		lc.setReadDeadline(time.Now().Add(lc.s.readTimeout))
	}
	for lc.w-lc.r < need {
		if !lc.fill() {
			return leanHandOff
		}
	}
	return leanOK
}

// fill reads more into the buffer, making room first (moving what is unread to the front, or
// growing the buffer up to a header's and a body's bounds).
func (lc *leanConn) fill() bool {
	if lc.w == len(lc.buf) {
		if lc.r > 0 {
			lc.w = copy(lc.buf, lc.buf[lc.r:lc.w])
			lc.r = 0
		} else if len(lc.buf) < maxLeanHeader+leanMaxBody {
			lc.buf = append(lc.buf, make([]byte, len(lc.buf))...)[:min(2*len(lc.buf), maxLeanHeader+leanMaxBody)]
		} else {
			return false // cannot happen: the parser hands off a longer request
		}
	}
	n, err := lc.c.Read(lc.buf[lc.w:])
	lc.w += n
	return n > 0 || err == nil
}

// serveRequest serves the parsed request, or reports that it was not served (nothing written:
// leanHandOff). After a served request, leanOK means the connection can serve another.
func (lc *leanConn) serveRequest() (served bool, next leanOutcome) {
	p := &lc.parsed
	u, ok := leanURL(p.target)
	if !ok {
		return false, leanHandOff
	}
	if !lc.readDeadline.IsZero() && !lc.idleDeadline && lc.s.readTimeout == 0 {
		lc.setReadDeadline(time.Time{}) // the header's bound ends with the header, as in net/http
	}
	if lc.s.writeTimeout > 0 {
		lc.setWriteDeadline(time.Now().Add(lc.s.writeTimeout))
	}
	req := &lc.req
	*req = *lc.base
	req.Method, req.URL, req.Proto, req.ProtoMajor, req.ProtoMinor = p.method, u, "HTTP/1.1", 1, 1
	req.Header, req.Host, req.RemoteAddr, req.RequestURI = p.header, p.host, lc.remote, p.target
	req.ContentLength, req.Body = p.contentLength, http.NoBody
	if p.contentLength > 0 {
		start := lc.r + p.headerLen
		lc.body.Reset(lc.buf[start : start+int(p.contentLength)])
		req.Body = io.NopCloser(&lc.body)
	}
	w := &lc.writer
	w.reset(lc.out, lc, p.method == http.MethodHead)
	served, aborted := lc.run(w, req)
	lc.stopWatch()
	*req = http.Request{}
	if !served {
		if w.status != 0 || w.wroteHeader {
			return true, leanHandOff // cannot happen (ServeLean wrote and said no): end the connection
		}
		return false, leanHandOff
	}
	lc.r += p.headerLen + int(p.contentLength)
	lc.s.leanRequests.Add(1) // before the answer's end reaches the client
	if aborted {
		return true, leanHandOff
	}
	if !w.finish() {
		return true, leanHandOff
	}
	return true, leanOK
}

// run calls the handler, recovering a panic as net/http does: http.ErrAbortHandler ends the
// connection quietly, any other is logged with its stack first.
func (lc *leanConn) run(w *leanWriter, req *http.Request) (served, aborted bool) {
	defer func() {
		if v := recover(); v != nil {
			served, aborted = true, true
			if v != http.ErrAbortHandler { //nolint:errorlint // sentinel value of panic
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				lc.logf("http: panic serving %v: %v\n%s", lc.remote, v, buf)
			}
		}
	}()
	return lc.s.lean.ServeLean(w, req), false
}

func (lc *leanConn) logf(format string, args ...any) {
	if l := lc.s.errorLog; l != nil {
		l.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// watchClient starts, once per answer, a read of the client's connection that ends the
// connection's context when the client leaves, so that an answer streamed from the upstream (an
// event stream, a body without a length) stops with it, as net/http's background read does.
// Plain answers do not pay for it: a client gone while they are written is noticed by the
// write.
func (lc *leanConn) watchClient() {
	if lc.watch != nil {
		return
	}
	if !lc.readDeadline.IsZero() {
		lc.setReadDeadline(time.Time{}) // the idle wait's bound, left in place (fastpath_deadline.go)
	}
	lc.watch = make(chan struct{})
	go func() {
		defer close(lc.watch)
		n, err := lc.c.Read(lc.watchByte[:])
		lc.watchN = n
		var ne net.Error
		if n == 0 && err != nil && (!errors.As(err, &ne) || !ne.Timeout()) {
			lc.end() // the client went away
		}
	}()
}

// stopWatch ends the read watchClient started, keeping the byte it may have read (the start of
// the next request).
func (lc *leanConn) stopWatch() {
	if lc.watch == nil {
		return
	}
	_ = lc.c.SetReadDeadline(time.Unix(1, 0))
	<-lc.watch
	lc.watch = nil
	lc.setReadDeadline(time.Time{})
	if lc.watchN > 0 {
		lc.appendRead(lc.watchByte[:lc.watchN])
		lc.watchN = 0
	}
}

// appendRead puts b after what the buffer holds.
func (lc *leanConn) appendRead(b []byte) {
	if lc.w+len(b) > len(lc.buf) {
		lc.w = copy(lc.buf, lc.buf[lc.r:lc.w])
		lc.r = 0
	}
	lc.w += copy(lc.buf[lc.w:], b)
}
