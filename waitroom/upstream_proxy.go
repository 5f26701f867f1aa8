package waitroom

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"
)

// upstreamProxy forwards admitted requests to a room's upstream over HTTP/1.1 keep-alive
// connections of its own.
//
// It exists for speed. httputil.ReverseProxy over http.Transport passes every request between
// three goroutines (the handler, the connection's write loop and its read loop) and allocates a
// 32 KiB copy buffer per response; on a 2-core node it stopped near 15k requests/s with no room in
// front of it, under the room's 20k floor. Here the handler's own goroutine writes the request
// (with net/http's Request.Write, the writer http.Transport uses) on a pooled connection, reads the
// answer with http.ReadResponse and streams it to the client: no hand-off, no parser of our own.
// What it sends and answers is what the ReverseProxy it replaces would (hop-by-hop headers
// removed, X-Forwarded-For/-Host/-Proto as ProxyRequest.SetXForwarded sets them, 1xx forwarded,
// streaming responses flushed as they come), except that the client's Accept-Encoding goes to the
// upstream unchanged (the fallback's transport does the same: DisableCompression).
//
// Requests it does not handle go to that httputil.ReverseProxy, kept as the fallback: protocol
// upgrades (WebSocket), Expect: 100-continue, CONNECT, every request to an https upstream
// (where http.Transport speaks HTTP/2), and request bodies of unknown length (chunked) or
// declared larger than leanMaxBody. The lean path writes the whole request before it reads the
// answer; a body that fits the connection's socket buffers is written whether or not the
// upstream reads it, but an upstream that answers a large upload without reading it would stall
// that write (and the client leaving would not end it: net/http notices a gone client only once
// the request body was read), where http.Transport writes and reads at once.
type upstreamProxy struct {
	target   *url.URL
	req      upstreamRequest // writes what is sent
	addr     string          // host:port to dial
	lean     bool            // false: everything goes to the fallback (https upstream)
	fallback *httputil.ReverseProxy
	dialer   net.Dialer
	// headerTimeout bounds the wait for the response's header after the request was written;
	// 0: no bound.
	headerTimeout time.Duration
	// fail answers a request the upstream could not serve (502).
	fail func(w http.ResponseWriter, r *http.Request, err error)

	maxIdle int // most idle connections kept

	mu     sync.Mutex
	idle   []*upstreamConn // most recently used last
	closed bool
}

// upstreamConn is one keep-alive connection to the upstream and the reader that holds what was
// read from it.
type upstreamConn struct {
	net.Conn
	br        *bufio.Reader
	idleSince time.Time
	lean      leanResponse // the response read last, when readLean read it (upstream_response.go)
}

const (
	// maxIdleUpstreamConns bounds the keep-alive connections kept per upstream: as many as a busy
	// node has requests in flight.
	maxIdleUpstreamConns = 1024
	// upstreamIdleTimeout drops a pooled connection unused for this long (http.DefaultTransport's
	// IdleConnTimeout), before the upstream's own keep-alive timeout is likely to close it.
	upstreamIdleTimeout = 90 * time.Second
	// max1xxResponses is how many informational answers one request may get (as http.Transport).
	max1xxResponses = 5
)

// upstreamProxyConfig configures newUpstreamProxy.
type upstreamProxyConfig struct {
	DialTimeout   time.Duration // 0: none
	HeaderTimeout time.Duration // 0: none
	// Fail answers a request whose upstream failed before any byte of the response was sent.
	Fail func(w http.ResponseWriter, r *http.Request, err error)
}

func newUpstreamProxy(target *url.URL, cfg upstreamProxyConfig) *upstreamProxy {
	p := &upstreamProxy{
		target:        target,
		req:           newUpstreamRequest(target),
		lean:          target.Scheme == "http",
		dialer:        net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second},
		headerTimeout: cfg.HeaderTimeout,
		fail:          cfg.Fail,
		maxIdle:       maxIdleUpstreamConns,
	}
	port := target.Port()
	if port == "" {
		port = "80"
		if target.Scheme == "https" {
			port = "443"
		}
	}
	p.addr = net.JoinHostPort(target.Hostname(), port)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = maxIdleUpstreamConns
	tr.MaxIdleConnsPerHost = maxIdleUpstreamConns
	tr.DisableCompression = true // pass the client's Accept-Encoding on, like the lean path
	tr.DialContext = p.dialer.DialContext
	tr.ResponseHeaderTimeout = cfg.HeaderTimeout
	p.fallback = &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		ErrorHandler: cfg.Fail,
	}
	return p
}

// close drops the idle connections, and every busy one when it comes back: the proxy moved to
// another upstream.
func (p *upstreamProxy) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.Close()
	}
	p.fallback.Transport.(*http.Transport).CloseIdleConnections()
}

// leanMaxBody is the largest request body the lean path sends (see upstreamProxy): well under
// the socket buffers of a loopback or LAN connection, and more than pages and forms send.
const leanMaxBody = 64 << 10

func (p *upstreamProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.lean || r.Method == http.MethodConnect || r.Header["Upgrade"] != nil || r.Header["Expect"] != nil ||
		r.ContentLength < 0 || r.ContentLength > leanMaxBody {
		p.fallback.ServeHTTP(w, r)
		return
	}
	ctx := r.Context()
	res, c, stop, err := p.roundTrip(ctx, w, r)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	keepAlive, err := p.copyResponse(w, res)
	// stop is false when the request's context ended: the connection's deadline is in the past.
	if !stop() || !keepAlive || err != nil {
		_ = c.Close()
		_ = res.Body.Close() // returns at once: the connection is closed
		if err != nil && r.Context().Value(http.ServerContextKey) != nil {
			// Cut the client's connection, so it sees a broken response rather than a short one
			// (as httputil.ReverseProxy does).
			panic(http.ErrAbortHandler)
		}
		return
	}
	p.put(c)
}

// interruptible makes ctx's end (the client gone) end c's wait for the upstream, until the
// returned stop is called (which reports false when ctx ended meanwhile). On the lean loop the
// client's connection does it (upstreamInterrupt); nil: it has ended already.
func (p *upstreamProxy) interruptible(ctx context.Context, c *upstreamConn) (stop func() bool) {
	if u := interruptOf(ctx); u != nil {
		if !u.watch(c.Conn) {
			return nil
		}
		return u.stopFn
	}
	return context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
}

// errBeforeResponse marks a failure before any byte of a response was read: on a pooled
// connection that the upstream had closed meanwhile, the request can be sent again.
type errBeforeResponse struct{ err error }

func (e errBeforeResponse) Error() string { return e.err.Error() }
func (e errBeforeResponse) Unwrap() error { return e.err }

// roundTrip sends in upstream and reads the response's header, forwarding 1xx answers to w. On
// success the caller owns c and must call stop (which reports false when ctx ended meanwhile).
func (p *upstreamProxy) roundTrip(ctx context.Context, w http.ResponseWriter, in *http.Request) (
	res *http.Response, c *upstreamConn, stop func() bool, err error) {
	// A request that can be sent twice: no body, and a method that means the same done twice (as
	// net/http decides; a request the upstream may have started on must not run again).
	replayable := bodyLength(in) <= 0 && (isIdempotent(in.Method) || in.Header["Idempotency-Key"] != nil ||
		in.Header["X-Idempotency-Key"] != nil)
	for attempt := 0; ; attempt++ {
		var reused bool
		// The second attempt checks the pooled connections it takes (and drops the dead ones:
		// after a quiet spell the upstream may have closed them all).
		c, reused, err = p.get(ctx, !replayable || attempt > 0)
		if err != nil {
			return nil, nil, nil, err
		}
		stop = p.interruptible(ctx, c)
		if stop == nil {
			_ = c.Close()
			return nil, nil, nil, context.Canceled // the client's connection ended
		}
		res, err = p.exchange(ctx, w, c, in)
		if err == nil {
			return res, c, stop, nil
		}
		stop()
		_ = c.Close()
		var before errBeforeResponse
		if attempt == 0 && reused && replayable && errors.As(err, &before) && ctx.Err() == nil {
			continue // a stale pooled connection: once more on a fresh one
		}
		return nil, nil, nil, err
	}
}

// exchange writes in, as sent upstream, on c and reads the response's header.
func (p *upstreamProxy) exchange(ctx context.Context, w http.ResponseWriter, c *upstreamConn, in *http.Request) (*http.Response, error) {
	bw := bufWriters.Get().(*bufio.Writer)
	bw.Reset(c)
	werr := p.req.write(bw, in)
	if werr == nil {
		werr = bw.Flush()
	}
	bw.Reset(nil)
	bufWriters.Put(bw)
	if werr != nil && bodyLength(in) <= 0 {
		return nil, errBeforeResponse{werr}
	}
	if p.headerTimeout > 0 {
		_ = c.SetReadDeadline(time.Now().Add(p.headerTimeout))
	} else if werr != nil {
		// The body could not be sent: the upstream may have answered early (413) and closed.
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	}
	if _, err := c.br.Peek(1); err != nil {
		if werr != nil {
			return nil, werr
		}
		return nil, errBeforeResponse{err}
	}
	for n := 0; ; n++ {
		res, ok := c.lean.readLean(c.br, in)
		if !ok {
			var err error
			if res, err = http.ReadResponse(c.br, in); err != nil { // it reads the method only (HEAD: no body)
				return nil, err
			}
		}
		if res.StatusCode >= 200 {
			if werr != nil {
				res.Close = true
			}
			if p.headerTimeout > 0 || werr != nil {
				_ = c.SetReadDeadline(time.Time{})
				if ctx.Err() != nil { // it may have set the deadline before it was cleared
					return nil, ctx.Err()
				}
			}
			return res, nil
		}
		if res.StatusCode == http.StatusSwitchingProtocols {
			return nil, errors.New("the upstream switched protocols without being asked to")
		}
		if n == max1xxResponses {
			return nil, errors.New("too many 1xx informational responses")
		}
		write1xx(w, res)
	}
}

// write1xx forwards an informational answer with its own header only: the response's header
// (the pass cookie already set, say) is put back for the final answer.
func write1xx(w http.ResponseWriter, res *http.Response) {
	h := w.Header()
	saved := h.Clone()
	clear(h)
	for k, vv := range res.Header {
		h[k] = vv
	}
	w.WriteHeader(res.StatusCode)
	clear(h)
	for k, vv := range saved {
		h[k] = vv
	}
}

// copyResponse sends res to w. It fails when the client went away or the upstream broke off
// mid-body; keepAlive reports whether the connection can serve another request (neither side
// asked to close).
func (p *upstreamProxy) copyResponse(w http.ResponseWriter, res *http.Response) (keepAlive bool, err error) {
	removeHopByHop(res.Header)
	h := w.Header()
	for k, vv := range res.Header {
		if prev := h[k]; len(prev) > 0 {
			h[k] = append(prev, vv...)
		} else {
			h[k] = vv // res.Header is not used again
		}
	}
	announced := len(res.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		h.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(res.StatusCode)

	// Stream what has no length (or is an event stream) as it comes, as httputil.ReverseProxy.
	// The header goes at once, before any body (and so without a sniffed Content-Type).
	var flush func() error
	if res.ContentLength == -1 || isEventStream(res.Header) {
		flush = http.NewResponseController(w).Flush
		_ = flush()
	}
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	for {
		n, rerr := res.Body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return false, err // the client went away
			}
			if flush != nil {
				_ = flush()
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return false, rerr // the upstream broke off
		}
	}
	_ = res.Body.Close() // at its end: fills res.Trailer
	if len(res.Trailer) > 0 {
		_ = http.NewResponseController(w).Flush()
	}
	if len(res.Trailer) == announced {
		for k, vv := range res.Trailer {
			h[k] = append(h[k], vv...)
		}
	} else {
		for k, vv := range res.Trailer {
			for _, v := range vv {
				h.Add(http.TrailerPrefix+k, v)
			}
		}
	}
	return !res.Close, nil
}

// get takes the most recently used idle connection (the least likely to have been closed by the
// upstream), or dials a new one. With check, a pooled connection is first asked whether the
// upstream closed it meanwhile (one non-blocking read): for a request that cannot be sent twice.
func (p *upstreamProxy) get(ctx context.Context, check bool) (c *upstreamConn, reused bool, err error) {
	now := time.Now()
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		c = p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if now.Sub(c.idleSince) < upstreamIdleTimeout && (!check || connAlive(c.Conn)) {
			return c, true, nil
		}
		_ = c.Close()
	}
	conn, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, false, fmt.Errorf("dial upstream %s: %w", p.addr, err)
	}
	return &upstreamConn{Conn: conn, br: bufio.NewReader(conn)}, false, nil
}

// put returns c to the pool, unless the pool is full or closed, or c holds bytes nobody asked
// for.
func (p *upstreamProxy) put(c *upstreamConn) {
	if c.br.Buffered() == 0 {
		c.idleSince = time.Now()
		p.mu.Lock()
		if !p.closed && len(p.idle) < p.maxIdle {
			p.idle = append(p.idle, c)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	_ = c.Close()
}

var (
	bufWriters  = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
	copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
)

// hopHeaders are the hop-by-hop headers httputil.ReverseProxy removes (RFC 7230 6.1 and RFC 2616
// 13.5.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopByHop removes the headers named in Connection and the hop-by-hop ones.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			switch sf = textproto.TrimString(sf); {
			case sf == "":
			case strings.EqualFold(sf, "keep-alive"): // the common one, without canonicalizing it
				delete(h, "Keep-Alive")
			default:
				h.Del(sf)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// headerHasToken reports whether the comma-separated values hold token (case-insensitive).
func headerHasToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(t), token) {
				return true
			}
		}
	}
	return false
}

func isIdempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

func isEventStream(h http.Header) bool {
	const es = "text/event-stream"
	ct := h.Get("Content-Type")
	if len(ct) < len(es) || !strings.EqualFold(ct[:len(es)], es) {
		return false // the common case, without parsing
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == es
}

// joinURLPath joins the upstream's path and the request's, as httputil.ReverseProxy's SetURL.
func joinURLPath(a, b *url.URL) (path, rawpath string) {
	if a.RawPath == "" && b.RawPath == "" {
		return singleJoiningSlash(a.Path, b.Path), ""
	}
	apath, bpath := a.EscapedPath(), b.EscapedPath()
	aslash, bslash := strings.HasSuffix(apath, "/"), strings.HasPrefix(bpath, "/")
	switch {
	case aslash && bslash:
		return a.Path + b.Path[1:], apath + bpath[1:]
	case !aslash && !bslash:
		return a.Path + "/" + b.Path, apath + "/" + bpath
	}
	return a.Path + b.Path, apath + bpath
}

func singleJoiningSlash(a, b string) string {
	aslash, bslash := strings.HasSuffix(a, "/"), strings.HasPrefix(b, "/")
	switch {
	case aslash && bslash:
		return a + b[1:]
	case !aslash && !bslash:
		return a + "/" + b
	}
	return a + b
}

// maxQueryParams is net/url's default bound on query parameters.
const maxQueryParams = 10000

// cleanQueryParams re-encodes a query net/url would not parse as it stands (a ';', a bad escape,
// too many parameters), as httputil.ReverseProxy does, so the upstream never reads a query the
// proxy read differently.
func cleanQueryParams(s string) string {
	reencode := func(s string) string {
		v, _ := url.ParseQuery(s)
		return v.Encode()
	}
	if strings.Count(s, "&")+1 > maxQueryParams {
		return reencode(s)
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case ';':
			return reencode(s)
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return reencode(s)
			}
			i += 3
		default:
			i++
		}
	}
	return s
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
