package waitroom_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// forwardedUpstream answers with what the proxy told it (path, body, X-Forwarded-*), frees the
// visitor's place on ?release=1, and holds a request at /hold until hold is closed.
func forwardedUpstream(t *testing.T, hold chan struct{}, inHold *atomic.Int64) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			inHold.Add(1)
			<-hold
		}
		if r.URL.Query().Get("release") == "1" {
			w.Header().Set(waitroom.ReleaseHeader, "release")
		}
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" body="+string(body)+" xff="+r.Header.Get("X-Forwarded-For")+
			" xfh="+r.Header.Get("X-Forwarded-Host")+" xfp="+r.Header.Get("X-Forwarded-Proto"))
	}))
	t.Cleanup(up.Close)
	return up
}

// onNewConnections is a client with c's cookies that opens connections of its own: a connection
// that entered the room without a pass stays with net/http, a new one starts in the lean loop.
func onNewConnections(c *http.Client) *http.Client {
	return &http.Client{Jar: c.Jar, Transport: &http.Transport{}, CheckRedirect: c.CheckRedirect}
}

// TestProxyServerLeanPath: an admitted visitor's requests go through the lean loop, with what the
// proxy does on net/http: the X-Forwarded-* fields, a form's body, HEAD, the keep-alive that
// refreshes the pass, the upstream's release header (removed, the place freed, the pass
// cleared), and a bypass path.
func TestProxyServerLeanPath(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{TouchInterval: 20 * time.Millisecond})
	var inHold atomic.Int64
	up := forwardedUpstream(t, nil, &inHold)
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, Upstream: up.URL,
		Bypass: waitroom.BypassRules{Paths: []string{"/static/"}}})
	site := serveProxy(t, room, nil)
	host := strings.TrimPrefix(site.URL, "http://")

	a := browser(t)
	if r := do(t, a, http.MethodGet, site.URL+"/enter", nil); r.code != http.StatusOK {
		t.Fatalf("entering: %d %q", r.code, r.body)
	}
	lean0 := site.Server.Stats().LeanRequests
	a2 := onNewConnections(a)
	r := doOnce(t, a2, http.MethodGet, site.URL+"/page?x=1", nil)
	if want := "GET /page?x=1 body= xff=127.0.0.1 xfh=" + host + " xfp=http"; r.code != http.StatusOK || r.body != want {
		t.Fatalf("lean GET: %d %q, want %q", r.code, r.body, want)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, site.URL+"/form", strings.NewReader("a=1&b=2"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := a2.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.HasPrefix(string(body), "POST /form body=a=1&b=2 ") {
		t.Fatalf("lean POST: %d %q", res.StatusCode, body)
	}
	if r := doOnce(t, a2, http.MethodHead, site.URL+"/page", nil); r.code != http.StatusOK || r.body != "" {
		t.Fatalf("lean HEAD: %d %q", r.code, r.body)
	}
	testwait.Until(t, 30*time.Second, "a lean request's keep-alive refreshes the pass", func() bool {
		r := doOnce(t, a2, http.MethodGet, site.URL+"/page", nil)
		return r.code == http.StatusOK && strings.Contains(r.header.Get("Set-Cookie"), "sluice_pass_r=v1.")
	})
	if got := site.Server.Stats().LeanRequests - lean0; got < 4 {
		t.Fatalf("the lean loop served %d of the admitted visitor's requests, want them all (4 or more)", got)
	}

	b := browser(t)
	if r := do(t, b, http.MethodGet, site.URL+"/x", nil); r.code != http.StatusServiceUnavailable {
		t.Fatalf("a second visitor while the room is full: %d", r.code)
	}
	lean1 := site.Server.Stats().LeanRequests
	r = doOnce(t, a2, http.MethodGet, site.URL+"/done?release=1", nil)
	if r.code != http.StatusOK || r.header.Get(waitroom.ReleaseHeader) != "" {
		t.Fatalf("release through the lean loop: %d %v", r.code, r.header)
	}
	if got := site.Server.Stats().LeanRequests - lean1; got != 1 {
		t.Fatalf("the releasing request went through the lean loop %d times, want 1 (%+v %+v)", got, site.Server.Stats(), room.Counters())
	}
	cookies := strings.Join(r.header.Values("Set-Cookie"), "\n")
	if !strings.Contains(cookies, "sluice_pass_r=;") || !strings.Contains(cookies, "sluice_left_r=") {
		t.Fatalf("the release did not clear the pass and set the left cookie:\n%s", cookies)
	}
	if r := do(t, b, http.MethodGet, site.URL+"/x", nil); r.code != http.StatusOK {
		t.Fatalf("the second visitor after the release: %d", r.code)
	}

	// A bypass path goes through the lean loop without a pass, and without a Redis call.
	lean2 := site.Server.Stats().LeanRequests
	anon := &http.Client{Transport: &http.Transport{}}
	if r := doOnce(t, anon, http.MethodGet, site.URL+"/static/app.css", nil); r.code != http.StatusOK ||
		!strings.HasPrefix(r.body, "GET /static/app.css") {
		t.Fatalf("bypass: %d %q", r.code, r.body)
	}
	if got := site.Server.Stats().LeanRequests - lean2; got != 1 {
		t.Fatalf("the bypassed request went through the lean loop %d times, want 1", got)
	}
	if n := room.Counters().Bypassed; n != 1 {
		t.Fatalf("bypassed counted %d times, want 1", n)
	}
}

// TestProxyServerShutdownDrains: Shutdown lets a request under way in the lean loop finish (its
// answer says Connection: close), closes idle connections, and refuses new ones.
func TestProxyServerShutdownDrains(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	hold := make(chan struct{})
	var inHold atomic.Int64
	up := forwardedUpstream(t, hold, &inHold)
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 10, Upstream: up.URL})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := waitroom.NewProxyServer(room, nil)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	cookie := admittedCookie(t, "http://"+ln.Addr().String())

	idle := dialLean(t, ln.Addr().String(), cookie, "/idle") // one request served, then idle
	busy, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_ = busy.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(busy, "GET /hold HTTP/1.1\r\nHost: shop\r\nCookie: "+cookie+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "the request reaches the upstream", func() bool { return inHold.Load() == 1 })
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v, want http.ErrServerClosed", err)
	}
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Fatal("the idle connection is still open after Shutdown")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a request under way", err)
	default:
	}
	close(hold)
	res, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the request under way at Shutdown: %v", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "GET /hold") || !res.Close {
		t.Fatalf("the request under way at Shutdown: %d close=%v %q", res.StatusCode, res.Close, body)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("a new connection was accepted after Shutdown")
	}
}

// dialLean opens a connection, has one request served on it and returns it.
func dialLean(t *testing.T, addr, cookie, path string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: shop\r\nCookie: "+cookie+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", path, res.StatusCode)
	}
	return conn
}

// TestProxyServerIdleTimeout: the http.Server's IdleTimeout closes a lean connection that waits
// too long for its next request.
func TestProxyServerIdleTimeout(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	var inHold atomic.Int64
	up := forwardedUpstream(t, nil, &inHold)
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 10, Upstream: up.URL})
	site := serveProxy(t, room, &http.Server{IdleTimeout: 100 * time.Millisecond, ReadHeaderTimeout: 10 * time.Second})
	cookie := admittedCookie(t, site.URL)
	lean0 := site.Server.Stats().LeanRequests
	conn := dialLean(t, strings.TrimPrefix(site.URL, "http://"), cookie, "/a")
	if site.Server.Stats().LeanRequests == lean0 {
		t.Fatal("the request did not go through the lean loop")
	}
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF { //nolint:errorlint // Read returns io.EOF itself
		t.Fatalf("an idle connection past IdleTimeout: read %d, %v; want the server to close it", n, err)
	}
}
