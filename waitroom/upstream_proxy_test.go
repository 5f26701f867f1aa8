package waitroom

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// rawUpstream is an HTTP/1.1 server on real TCP that records the bytes of every request it reads
// and answers with the bytes respond returns; it closes the connection after an answer that says
// "Connection: close" (or always, with closeAfter).
type rawUpstream struct {
	ln         net.Listener
	respond    func(req *http.Request) string
	closeAfter bool

	mu       sync.Mutex
	requests []string
	conns    int
	open     map[net.Conn]bool
	closed   chan struct{} // a value each time it closes a connection after an answer
}

func newRawUpstream(t *testing.T, respond func(req *http.Request) string) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln, respond: respond, open: make(map[net.Conn]bool), closed: make(chan struct{}, 100)}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns++
			u.open[c] = true
			u.mu.Unlock()
			go u.serve(c)
		}
	}()
	return u
}

func (u *rawUpstream) serve(c net.Conn) {
	defer func() {
		_ = c.Close()
		u.mu.Lock()
		delete(u.open, c)
		u.mu.Unlock()
	}()
	var seen bytes.Buffer
	br := bufio.NewReader(io.TeeReader(c, &seen))
	for {
		seen.Reset()
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		u.mu.Lock()
		u.requests = append(u.requests, seen.String())
		u.mu.Unlock()
		resp := u.respond(req)
		if _, err := io.WriteString(c, resp); err != nil {
			return
		}
		u.mu.Lock()
		closeAfter := u.closeAfter
		u.mu.Unlock()
		if closeAfter || strings.Contains(resp, "Connection: close") {
			_ = c.Close()
			u.closed <- struct{}{}
			return
		}
	}
}

// closeIdle closes every connection open now (between requests, they are idle).
func (u *rawUpstream) closeIdle() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.open {
		_ = c.Close()
	}
}

func (u *rawUpstream) url() *url.URL { return &url.URL{Scheme: "http", Host: u.ln.Addr().String()} }

func (u *rawUpstream) seen() (requests []string, conns int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.requests...), u.conns
}

// testFail answers like the room's proxy: 502 with the registered code.
func testFail(w http.ResponseWriter, r *http.Request, _ error) {
	WriteError(w, r, &HTTPError{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable, Message: "the upstream could not be reached"})
}

// testSite is a proxy under test, served on loopback.
type testSite struct {
	URL      string
	Listener net.Listener
	server   *ProxyServer
}

// newTestProxy serves the upstream client as the room's proxy is served: by a ProxyServer, whose
// lean loop takes the plain requests and hands the others to net/http.
func newTestProxy(t *testing.T, target *url.URL, cfg upstreamProxyConfig) (*upstreamProxy, *testSite) {
	t.Helper()
	if cfg.Fail == nil {
		cfg.Fail = testFail
	}
	p := newUpstreamProxy(target, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewLeanServer(p, &http.Server{Handler: p})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		p.close()
	})
	return p, &testSite{URL: "http://" + ln.Addr().String(), Listener: ln, server: srv}
}

// rawResponse is what a client read: every status (1xx first), the final header without Date,
// the body and the trailer.
type rawResponse struct {
	statuses []int
	informal []http.Header
	header   http.Header
	body     string
	trailer  http.Header
}

// send writes raw to addr on a fresh connection and reads the answer.
func send(t *testing.T, addr, raw string) rawResponse {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("test request: %v", err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	return readRaw(t, bufio.NewReader(conn), req)
}

func readRaw(t *testing.T, br *bufio.Reader, req *http.Request) rawResponse {
	t.Helper()
	var r rawResponse
	for {
		res, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		r.statuses = append(r.statuses, res.StatusCode)
		if res.StatusCode < 200 {
			r.informal = append(r.informal, res.Header)
			_ = res.Body.Close() // none: a 1xx has no body
			continue
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			t.Fatalf("read body: %v", err)
		}
		res.Header.Del("Date")
		r.header, r.body, r.trailer = res.Header, string(body), res.Trailer
		return r
	}
}

// TestUpstreamProxyMatchesReverseProxy sends the same requests through the lean path and through
// the httputil.ReverseProxy it replaces (Rewrite: SetURL, SetXForwarded), each to its own upstream
// answering the same bytes: the upstreams read the same bytes, and the clients the same answers.
// (A streamed answer without a Content-Type is left out: httputil.ReverseProxy flushes its header
// from a timer racing the first body write, so whether the server sniffs a type varies; the lean
// path flushes the header first, always.)
func TestUpstreamProxyMatchesReverseProxy(t *testing.T) {
	t.Parallel()
	const ok = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
	cases := []struct {
		name, req, resp string
	}{
		{"get", "GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: site.example\r\nUser-Agent: ua/1\r\nAccept-Encoding: gzip\r\n" +
			"Cookie: a=b\r\nX-Multi: 1\r\nX-Multi: 2\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nSet-Cookie: s=1\r\nSet-Cookie: t=2\r\n\r\nhello"},
		{"hop-by-hop both ways", "GET / HTTP/1.1\r\nHost: site.example\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n" +
			"Keep-Alive: timeout=5\r\nProxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nTe: trailers, deflate\r\n" +
			"X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Host: evil\r\nX-Forwarded-Proto: https\r\nForwarded: for=6.6.6.6\r\n\r\n",
			"HTTP/1.1 200 OK\r\nConnection: X-Resp-Hop\r\nX-Resp-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\n" +
				"X-End: 1\r\nContent-Length: 2\r\n\r\nok"},
		{"query re-encoded", "GET /q?b=2;a=1&c=%zz HTTP/1.1\r\nHost: site.example\r\n\r\n", ok},
		{"escaped path", "GET /a%2Fb/c%20d HTTP/1.1\r\nHost: site.example\r\n\r\n", ok},
		{"post with length", "POST /form HTTP/1.1\r\nHost: site.example\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
			"Content-Length: 6\r\n\r\nname=x", "HTTP/1.1 201 Created\r\nLocation: /form/1\r\nContent-Length: 0\r\n\r\n"},
		{"post chunked", "POST /up HTTP/1.1\r\nHost: site.example\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", ok},
		// Chunked request bodies take the fallback (see upstreamProxy): the same bytes by design.
		{"post chunked with trailer", "POST /up HTTP/1.1\r\nHost: site.example\r\nTransfer-Encoding: chunked\r\nTrailer: X-Check\r\n\r\n" +
			"5\r\nhello\r\n0\r\nX-Check: 7\r\n\r\n", ok},
		{"put empty", "PUT /x HTTP/1.1\r\nHost: site.example\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 204 No Content\r\n\r\n"},
		{"head", "HEAD /big HTTP/1.1\r\nHost: site.example\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1234\r\n\r\n"},
		{"not modified", "GET /c HTTP/1.1\r\nHost: site.example\r\nIf-None-Match: \"v1\"\r\n\r\n",
			"HTTP/1.1 304 Not Modified\r\nEtag: \"v1\"\r\n\r\n"},
		{"chunked with trailer", "GET /t HTTP/1.1\r\nHost: site.example\r\nTe: trailers\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\nX-Sum: 42\r\n\r\n"},
		{"event stream", "GET /events HTTP/1.1\r\nHost: site.example\r\nAccept: text/event-stream\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 12\r\n\r\ndata: hi\r\n\r\n"},
		{"upstream closes", "GET / HTTP/1.1\r\nHost: site.example\r\n\r\n",
			"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"},
		{"body until close", "GET / HTTP/1.1\r\nHost: site.example\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nto the end"},
		{"client closes", "GET / HTTP/1.1\r\nHost: site.example\r\nConnection: close\r\n\r\n", ok},
		{"early hints", "GET / HTTP/1.1\r\nHost: site.example\r\n\r\n",
			"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" + ok},
		{"error status", "DELETE /x?y HTTP/1.1\r\nHost: site.example\r\n\r\n",
			"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\nContent-Length: 4\r\n\r\nbusy"},
		{"empty query", "GET /a? HTTP/1.1\r\nHost: site.example\r\n\r\n", ok},
		{"no user agent, odd spacing", "OPTIONS /o HTTP/1.1\r\nHost: site.example\r\nX-Pad:   padded \t \r\nUser-Agent:\r\n\r\n", ok},
		{"many fields", "GET /m HTTP/1.1\r\nHost: site.example\r\n" + manyFields(40) + "\r\n", ok},
	}
	for _, tc := range cases {
		for _, base := range []string{"", "/base?t=1"} {
			t.Run(tc.name+" to "+cmp.Or(base, "/"), func(t *testing.T) {
				t.Parallel()
				testMatchesReverseProxy(t, base, tc.req, tc.resp)
			})
		}
	}
}

func manyFields(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "X-Field-%02d: %d\r\n", n-i, i)
	}
	return b.String()
}

// testMatchesReverseProxy sends req through the lean path and through httputil.ReverseProxy, to
// an upstream with the path and query of base (joined with the request's), each answering resp,
// and compares what the upstreams and the clients read.
func testMatchesReverseProxy(t *testing.T, base, req, resp string) {
	respond := func(*http.Request) string { return resp }
	leanUp, refUp := newRawUpstream(t, respond), newRawUpstream(t, respond)
	leanTarget, refTarget := leanUp.url(), refUp.url()
	path, query, _ := strings.Cut(base, "?")
	leanTarget.Path, leanTarget.RawQuery = path, query
	refTarget.Path, refTarget.RawQuery = path, query
	_, lean := newTestProxy(t, leanTarget, upstreamProxyConfig{})
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	ref := httptest.NewServer(&httputil.ReverseProxy{Transport: tr, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(refTarget)
		pr.SetXForwarded()
	}})
	t.Cleanup(ref.Close)

	got := send(t, lean.Listener.Addr().String(), req)
	want := send(t, ref.Listener.Addr().String(), req)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the client got\n%+v\nwant (httputil.ReverseProxy)\n%+v", got, want)
	}
	gotReqs, _ := leanUp.seen()
	wantReqs, _ := refUp.seen()
	norm := func(reqs []string, u *rawUpstream) string {
		return strings.ReplaceAll(strings.Join(reqs, "\n--\n"), u.ln.Addr().String(), "UPSTREAM")
	}
	w := norm(wantReqs, refUp)
	if g := norm(gotReqs, leanUp); g != w {
		t.Errorf("the upstream read\n%q\nwant (httputil.ReverseProxy)\n%q", g, w)
	}
}

// TestUpstreamProxyKeepAlive: requests share one upstream connection, except after an answer
// with "Connection: close"; a client's own "Connection: close" does not close the upstream's.
func TestUpstreamProxyKeepAlive(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(r *http.Request) string {
		if r.URL.Path == "/close" {
			return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	})
	p, site := newTestProxy(t, up.url(), upstreamProxyConfig{})
	addr := site.Listener.Addr().String()
	for _, path := range []string{"/a", "/b", "/c"} {
		if r := send(t, addr, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); r.body != "ok" {
			t.Fatalf("%s: %+v", path, r)
		}
	}
	if reqs, conns := up.seen(); len(reqs) != 3 || conns != 1 {
		t.Fatalf("3 requests on %d connections (%d requests seen), want 1", conns, len(reqs))
	}
	send(t, addr, "GET /close HTTP/1.1\r\nHost: x\r\n\r\n")
	if n := idleConns(p); n != 0 {
		t.Fatalf("%d idle connections after the upstream's Connection: close, want 0", n)
	}
	send(t, addr, "GET /d HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, conns := up.seen(); conns != 2 {
		t.Fatalf("%d connections, want a new one after Connection: close", conns)
	}
}

func idleConns(p *upstreamProxy) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// TestUpstreamProxyStaleConnection: the upstream closes every connection after its answer without
// saying so. A GET finds the pooled connection dead and is sent again on a new one; a POST is
// never sent on it (the pooled connection is checked first), and never twice.
func TestUpstreamProxyStaleConnection(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(r *http.Request) string {
		return "HTTP/1.1 200 OK\r\nContent-Length: " + fmt.Sprint(len(r.Method)) + "\r\n\r\n" + r.Method
	})
	up.closeAfter = true
	_, site := newTestProxy(t, up.url(), upstreamProxyConfig{})
	addr := site.Listener.Addr().String()
	for i, raw := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n", // on the pooled connection: fails, sent again
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		if i > 0 {
			<-up.closed // the connection the proxy pooled is closed now
		}
		if r := send(t, addr, raw); r.statuses[0] != 200 || !strings.HasPrefix(raw, r.body) {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	if reqs, conns := up.seen(); len(reqs) != 5 || conns != 5 {
		t.Fatalf("%d requests on %d connections, want each of the 5 once, on its own", len(reqs), conns)
	}
}

// TestUpstreamProxyAllPooledStale: every pooled connection was closed by the upstream (after a
// quiet spell, say): a GET still gets its answer, the second attempt skipping the dead ones.
func TestUpstreamProxyAllPooledStale(t *testing.T) {
	t.Parallel()
	const parallel = 3
	var arrived sync.WaitGroup
	arrived.Add(parallel)
	up := newRawUpstream(t, func(*http.Request) string {
		arrived.Done()
		arrived.Wait() // all three in flight at once: three connections
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	})
	p, site := newTestProxy(t, up.url(), upstreamProxyConfig{})
	addr := site.Listener.Addr().String()
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() { send(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") })
	}
	wg.Wait()
	if n := idleConns(p); n != parallel {
		t.Fatalf("%d idle connections, want %d", n, parallel)
	}
	up.mu.Lock()
	up.closeAfter = true // from now on; the three pooled ones are closed below
	up.mu.Unlock()
	up.closeIdle()
	arrived.Add(1)
	if r := send(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); r.statuses[0] != 200 || r.body != "ok" {
		t.Fatalf("GET with every pooled connection dead: %+v", r)
	}
}

// TestUpstreamProxyDown: an upstream nobody listens on is a 502 with the registered code.
func TestUpstreamProxyDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	_ = ln.Close()
	_, site := newTestProxy(t, target, upstreamProxyConfig{})
	r := send(t, site.Listener.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if r.statuses[0] != http.StatusBadGateway || !strings.Contains(r.body, `"code":"upstream_unavailable"`) {
		t.Fatalf("upstream down: %+v", r)
	}
}

// TestUpstreamProxyHeaderTimeout: an upstream that does not answer within HeaderTimeout is a 502,
// and its connection is not kept.
func TestUpstreamProxyHeaderTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(release) })
	target, _ := url.Parse(up.URL)
	p, site := newTestProxy(t, target, upstreamProxyConfig{HeaderTimeout: 50 * time.Millisecond})
	r := send(t, site.Listener.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if r.statuses[0] != http.StatusBadGateway || idleConns(p) != 0 {
		t.Fatalf("slow upstream: %+v, %d idle connections", r, idleConns(p))
	}
}

// TestUpstreamProxyStreams: a response without a length reaches the client as the upstream
// writes it, and a client that goes away mid-response ends the upstream's request.
func TestUpstreamProxyStreams(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first")
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done() // the proxy closed the connection
		close(ended)
	}))
	t.Cleanup(up.Close)
	target, _ := url.Parse(up.URL)
	p, site := newTestProxy(t, target, upstreamProxyConfig{})
	conn, err := net.Dial("tcp", site.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	first := make([]byte, 5)
	if _, err := io.ReadFull(res.Body, first); err != nil || string(first) != "first" {
		t.Fatalf("first chunk: %q %v", first, err)
	}
	_ = conn.Close()
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the upstream's request did not end when the client went away")
	}
	if n := idleConns(p); n != 0 {
		t.Fatalf("%d idle connections after a broken response, want 0", n)
	}
}

// TestUpstreamProxyIdleBound: no more than maxIdle connections are kept, and close drops them and
// every busy one when it comes back.
func TestUpstreamProxyIdleBound(t *testing.T) {
	t.Parallel()
	const parallel = 6
	arrived, release := make(chan struct{}, parallel), make(chan struct{})
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "ok")
	}))
	var mu sync.Mutex
	open := 0
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			open++
		case http.StateClosed, http.StateHijacked:
			open--
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	target, _ := url.Parse(up.URL)
	p, site := newTestProxy(t, target, upstreamProxyConfig{})
	p.maxIdle = 2
	addr := site.Listener.Addr().String()
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			if r := send(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); r.body != "ok" {
				t.Errorf("response: %+v", r)
			}
		})
	}
	for range parallel {
		<-arrived
	}
	close(release)
	wg.Wait()
	testwait.Until(t, time.Minute, "2 upstream connections left open", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return open == 2 && idleConns(p) == 2
	})
	p.close()
	testwait.Until(t, time.Minute, "no upstream connection left open after close", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return open == 0
	})
	send(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if n := idleConns(p); n != 0 {
		t.Fatalf("%d idle connections kept after close, want 0", n)
	}
}

// TestUpstreamProxyFallback: an Upgrade (WebSocket-like echo) and an Expect: 100-continue go
// through the httputil.ReverseProxy fallback and work.
func TestUpstreamProxyFallback(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			body, _ := io.ReadAll(r.Body)
			_, _ = w.Write(body)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		_, _ = brw.WriteString(line)
		_ = brw.Flush()
	}))
	t.Cleanup(up.Close)
	target, _ := url.Parse(up.URL)
	_, site := newTestProxy(t, target, upstreamProxyConfig{})

	conn, err := net.Dial("tcp", site.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	_ = res.Body.Close() // none: the connection is the upgraded protocol's now
	_, _ = io.WriteString(conn, "ping\n")
	if line, err := br.ReadString('\n'); line != "ping\n" {
		t.Fatalf("echo over the upgraded connection: %q %v", line, err)
	}

	r := send(t, site.Listener.Addr().String(), "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody")
	if r.statuses[len(r.statuses)-1] != 200 || r.body != "body" {
		t.Fatalf("Expect: 100-continue: %+v", r)
	}
}

// TestUpstreamProxyInformationalKeepsHeader: a 1xx answer carries only its own header, and the
// header set before it (the pass cookie) still goes with the final answer.
func TestUpstreamProxyInformationalKeepsHeader(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(*http.Request) string {
		return "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	})
	p := newUpstreamProxy(up.url(), upstreamProxyConfig{Fail: testFail})
	t.Cleanup(p.close)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Set-Cookie", "pass=1")
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(site.Close)
	r := send(t, site.Listener.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if fmt.Sprint(r.statuses) != "[103 200]" || r.informal[0].Get("Set-Cookie") != "" ||
		r.informal[0].Get("Link") != "</s.css>" || r.header.Get("Set-Cookie") != "pass=1" || r.header.Get("Link") != "" {
		t.Fatalf("1xx and final header: %+v", r)
	}
}

// TestUpstreamProxyLargeUploadNotStalled: an upstream that answers a large upload before reading
// it (and then reads nothing more) still gets its answer to the client. The lean path writes the
// whole body before it reads, which would stall once the socket buffers are full; bodies
// declared over leanMaxBody take the fallback, which writes and reads at once.
func TestUpstreamProxyLargeUploadNotStalled(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			go func() { // read the header only, answer, then never read again
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = io.WriteString(c, "HTTP/1.1 202 Accepted\r\nContent-Length: 7\r\n\r\nstarted")
			}()
		}
	}()
	_, site := newTestProxy(t, &url.URL{Scheme: "http", Host: ln.Addr().String()}, upstreamProxyConfig{})
	t.Cleanup(func() { // first: a proxy stalled on its write to us ends, so the site can close
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	// Far over the socket buffers of both hops (Linux lets loopback buffer tens of MiB), made as
	// it is read: once the answer came, the rest is never sent.
	const size = 1 << 30
	for _, length := range []int64{size, -1} { // declared, then chunked
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, site.URL+"/upload", io.LimitReader(zeros{}, size))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		client := &http.Client{Timeout: 20 * time.Second} // a stall fails here, not at the suite's timeout
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST of 1 GiB (length %d) to an upstream that answers without reading it: %v", length, err)
		}
		got, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil || res.StatusCode != http.StatusAccepted || string(got) != "started" {
			t.Fatalf("length %d: answer %d %q, %v; want 202 started", length, res.StatusCode, got, err)
		}
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestUpstreamRequestNoInjection: a request built in code (by a handler in front of the proxy,
// not parsed by net/http) cannot add lines to what goes upstream: a field name that is no token
// is dropped, line breaks in values become spaces, and a control character in the target or a
// bad method refuses the request, as Request.Write does.
func TestUpstreamRequestNoInjection(t *testing.T) {
	t.Parallel()
	u := newUpstreamRequest(&url.URL{Scheme: "http", Host: "up.example:8080"})
	write := func(r *http.Request) (string, error) {
		var b bytes.Buffer
		bw := bufio.NewWriter(&b)
		err := u.write(bw, r)
		_ = bw.Flush()
		return b.String(), err
	}
	r := httptest.NewRequest(http.MethodGet, "http://site.example/a", nil)
	r.Header["X-Evil\r\nInjected"] = []string{"1"}
	r.Header["X-Split"] = []string{"a\r\nInjected: 2"}
	got, err := write(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "\r\nInjected") || !strings.Contains(got, "X-Split: a  Injected: 2\r\n") ||
		!strings.HasPrefix(got, "GET /a HTTP/1.1\r\nHost: up.example:8080\r\n") {
		t.Fatalf("written:\n%q", got)
	}
	r = httptest.NewRequest(http.MethodGet, "http://site.example/a", nil)
	r.URL.RawQuery = "x=1\r\nInjected: 3"
	if got, err := write(r); err == nil {
		t.Fatalf("a control character in the query was written:\n%q", got)
	}
	r = httptest.NewRequest(http.MethodGet, "http://site.example/a", nil)
	r.Method = "GET /b HTTP/1.1\r\nInjected: 4\r\n\r\nGET"
	if got, err := write(r); err == nil {
		t.Fatalf("a bad method was written:\n%q", got)
	}
}
