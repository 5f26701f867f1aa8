package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/internal/testkit/rawhttp"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server/rooms"
)

// proxyRoomServer starts a server whose public listener proxies every host through the room
// "shop" (max_active 10) to upstream.
func proxyRoomServer(t *testing.T, upstream string, opts ...func(*Config)) *testServer {
	t.Helper()
	return proxyRoomServerOn(t, redistest.New(t), "shop", upstream, opts...)
}

// proxyRoomServerOn is proxyRoomServer on env's Redis, for the room named room.
func proxyRoomServerOn(t *testing.T, env *redistest.Env, room, upstream string, opts ...func(*Config)) *testServer {
	t.Helper()
	ts := newTestServerOn(t, env, append([]func(*Config){func(c *Config) { c.ProxyRooms = "*=" + room }}, opts...)...)
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/"+room, map[string]any{"max_active": 10, "upstream": upstream}), http.StatusCreated, "")
	return ts
}

// admittedCookie admits a new visitor through ts's room proxy and returns its cookies as a
// Cookie header's value. The visitor's own connection went to net/http (it had no pass); a
// client that sends the header on a new connection is served by the lean loop.
func admittedCookie(t *testing.T, ts *testServer) string {
	t.Helper()
	v := newVisitor(t)
	if r := v.do(t, http.MethodGet, ts.PublicURL+"/enter", nil); r.Status != http.StatusOK {
		t.Fatalf("the visitor was not admitted: %d %s", r.Status, r.Body)
	}
	u, _ := url.Parse(ts.PublicURL)
	var parts []string
	for _, c := range v.c.Jar.Cookies(u) {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return strings.Join(parts, "; ")
}

// freshClient is a client with a connection pool of its own.
func freshClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// The public listener's lean loop (proxy_rooms) answers every hostile byte stream exactly as
// net/http serving a server's handler does, and lets the upstream read the same requests: a
// stream is either served the same by the lean loop or handed to net/http. The two sides are two
// servers on one Redis, each with a room and an upstream of its own (an upstream reads a broken
// request's body after its answer went out, so one upstream could not tell the sides apart).
func TestRoomProxyLeanLoopAnswersAsNetHTTP(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	upLean, upPlain := rawhttp.NewEchoUpstream(t), rawhttp.NewEchoUpstream(t)
	ts := proxyRoomServerOn(t, env, "lean7", upLean.URL)
	other := proxyRoomServerOn(t, env, "net7", upPlain.URL)
	plain := httptest.NewServer(other.srv.PublicHandler()) // the server's handler, on net/http alone
	t.Cleanup(plain.Close)
	passLean, passPlain := admittedCookie(t, ts), admittedCookie(t, other)
	lean, netHTTP := strings.TrimPrefix(ts.PublicURL, "http://"), strings.TrimPrefix(plain.URL, "http://")

	before := ts.srv.leanStats().LeanRequests
	for name, raw := range rawhttp.HostileStreams() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fill := func(room, pass string) string {
				return strings.ReplaceAll(strings.ReplaceAll(raw, "PASS", pass), "ROOM", room)
			}
			gotLean := rawhttp.Exchange(t, lean, fill("lean7", passLean))
			gotPlain := rawhttp.Exchange(t, netHTTP, fill("net7", passPlain))
			if !slices.Equal(replaceAll(gotLean, "lean7", "ROOM"), replaceAll(gotPlain, "net7", "ROOM")) {
				t.Fatalf("answers differ\nlean loop: %q\nnet/http:  %q", gotLean, gotPlain)
			}
			if len(gotPlain) == 0 && name != "truncated" {
				t.Fatalf("no answer at all")
			}
		})
	}
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		same := func() bool {
			l, p := upLean.Requests(), upPlain.Requests()
			slices.Sort(l)
			slices.Sort(p)
			return slices.Equal(l, p)
		}
		for deadline := time.Now().Add(10 * time.Second); !same() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // a broken request's body is read after its answer
		}
		if !same() {
			t.Errorf("the upstreams read different requests\nlean loop: %q\nnet/http:  %q", upLean.Requests(), upPlain.Requests())
		}
		if n := ts.srv.leanStats().LeanRequests - before; n < 8 {
			t.Errorf("the lean loop served %d requests: the comparison did not exercise it", n)
		}
	})
}

// replaceAll replaces old by new in each string.
func replaceAll(ss []string, old, new string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ReplaceAll(s, old, new)
	}
	return out
}

// A request the lean loop serves gets what wrap gives every request: its X-Request-Id (the
// client's when sane, else a new one), a count in sluice_http_requests_total under its route, an
// access log line (at debug level) with the same fields as a request net/http serves, and the
// in-flight gauge back at zero.
func TestRoomProxyLeanRequestsAreLoggedAndCounted(t *testing.T) {
	t.Parallel()
	up := rawhttp.NewEchoUpstream(t)
	logs := &testio.Buffer{}
	ts := proxyRoomServer(t, up.URL, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	cookie := admittedCookie(t, ts)
	served := func() float64 { return counterValue(t, ts, "public", "/", "200") }
	stats, count := ts.srv.leanStats(), served()

	c := freshClient(t)
	const n = 5
	for i := range n {
		r := sendWith(t, c, http.MethodGet, ts.PublicURL+"/page", map[string]string{"Cookie": cookie, "X-Request-Id": fmt.Sprintf("lean-%d", i)}, nil)
		if r.Status != http.StatusOK || r.Header.Get("X-Request-Id") != fmt.Sprintf("lean-%d", i) {
			t.Fatalf("lean request %d: %d, request id %q", i, r.Status, r.Header.Get("X-Request-Id"))
		}
	}
	r := sendWith(t, c, http.MethodGet, ts.PublicURL+"/page", map[string]string{"Cookie": cookie, "X-Request-Id": "bad id"}, nil)
	if id := r.Header.Get("X-Request-Id"); r.Status != http.StatusOK || !regexp.MustCompile(`^[0-9a-f]{24}$`).MatchString(id) {
		t.Fatalf("a request with an insane id: %d, request id %q, want a new one", r.Status, id)
	}
	now := ts.srv.leanStats()
	if got := now.LeanRequests - stats.LeanRequests; got != n+1 || now.HandedOff != stats.HandedOff {
		t.Fatalf("the lean loop served %d requests and handed off %d connections, want %d and none", got, now.HandedOff-stats.HandedOff, n+1)
	}
	if got := served() - count; got != n+1 {
		t.Fatalf("sluice_http_requests_total{route=\"/\",code=\"200\"} rose by %v, want %d", got, n+1)
	}
	metrics := ts.adminDo(t, http.MethodGet, "/metrics", nil)
	if !strings.Contains(string(metrics.Body), "sluice_http_lean_requests_total ") {
		t.Fatalf("/metrics has no sluice_http_lean_requests_total")
	}

	// The same request with a chunked body: the lean loop hands it to net/http.
	raw := "GET /page HTTP/1.1\r\nHost: shop\r\nCookie: " + cookie + "\r\nX-Request-Id: handed-off\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"
	if got := rawhttp.Exchange(t, strings.TrimPrefix(ts.PublicURL, "http://"), raw); len(got) != 1 || !strings.HasPrefix(got[0], "200 ") {
		t.Fatalf("handed-off request: %q", got)
	}
	if ts.srv.leanStats().HandedOff != now.HandedOff+1 {
		t.Fatal("the chunked request was not handed off")
	}
	testwait.Until(t, 10*time.Second, "the requests' log lines", func() bool {
		return strings.Contains(logs.String(), `"request_id":"handed-off"`)
	})
	leanLine, handedLine := requestLogLine(t, logs.String(), "lean-3"), requestLogLine(t, logs.String(), "handed-off")
	for _, line := range []map[string]any{leanLine, handedLine} {
		delete(line, "time")
		delete(line, "duration_ms")
		delete(line, "request_id")
	}
	if !mapsEqual(leanLine, handedLine) || leanLine["route"] != "/" || leanLine["status"] != float64(200) || leanLine["listener"] != "public" {
		t.Fatalf("log lines differ or lack fields\nlean loop: %v\nnet/http:  %v", leanLine, handedLine)
	}
	if n := publicInFlight(t, ts); n != 0 {
		t.Fatalf("requests in flight after all answered: %v", n)
	}
}

// counterValue reads sluice_http_requests_total for a listener, route and status.
func counterValue(t *testing.T, ts *testServer, listener, route, code string) float64 {
	t.Helper()
	var m dto.Metric
	if err := ts.srv.metrics.requests.WithLabelValues(listener, route, code).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// requestLogLine returns the access log line of the request with id.
func requestLogLine(t *testing.T, logs, id string) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "request" && line["request_id"] == id {
			return line
		}
	}
	t.Fatalf("no access log line for request %s in\n%s", id, logs)
	return nil
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// An upstream's redirect reaches the visitor as the upstream sent it, whichever loop serves it.
// (Before, the middleware took a proxied 301, 307 or 308 for the mux's own redirect of an unclean
// path and answered 404 no route.)
func TestRoomProxyPassesUpstreamRedirects(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		if _, err := fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/old/"), &code); err != nil {
			return // the visitor's way in
		}
		http.Redirect(w, r, "/new", code)
	}))
	t.Cleanup(app.Close)
	ts := proxyRoomServer(t, app.URL)
	plain := httptest.NewServer(ts.srv.PublicHandler()) // the same handler on net/http alone
	t.Cleanup(plain.Close)
	cookie := map[string]string{"Cookie": admittedCookie(t, ts)}
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, via := range []struct{ name, url string }{{"lean loop", ts.PublicURL}, {"net/http", plain.URL}} {
			r := sendWith(t, freshClient(t), http.MethodGet, fmt.Sprintf("%s/old/%d", via.url, code), cookie, nil)
			if r.Status != code || r.Header.Get("Location") != "/new" {
				t.Errorf("%s, upstream %d: got %d, Location %q", via.name, code, r.Status, r.Header.Get("Location"))
			}
		}
	}
}

// A visitor served by the lean loop who stops reading a large answer loses its connection at the
// write timeout, as on net/http: the request ends and its slot in flight is freed.
func TestRoomProxyLeanSlowReaderIsCut(t *testing.T) {
	t.Parallel()
	const size = 32 << 20
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(app.Close)
	ts := proxyRoomServer(t, app.URL, func(c *Config) { c.WriteTimeout = time.Second })
	cookie := admittedCookie(t, ts)
	leanBefore := ts.srv.leanStats().LeanRequests
	conn := dialSmallBuffer(t, ts)
	fmt.Fprintf(conn, "GET /big HTTP/1.1\r\nHost: shop\r\nCookie: %s\r\n\r\n", cookie)
	testwait.Until(t, 30*time.Second, "the request to start", func() bool { return publicInFlight(t, ts) > 0 })
	testwait.Until(t, 30*time.Second, "the request of the unread answer to end", func() bool { return publicInFlight(t, ts) == 0 })
	testwait.Until(t, 10*time.Second, "the lean loop to count the request", func() bool { return ts.srv.leanStats().LeanRequests > leanBefore })
	got, _ := io.Copy(io.Discard, conn)
	if got >= size {
		t.Fatalf("the slow reader got %d bytes, want the connection cut before the %d of the answer", got, size)
	}
}

// A request the lean loop is serving when the server shuts down gets its whole answer: the
// listener stops taking connections, the request finishes, and Serve returns.
func TestRoomProxyLeanRequestFinishesAtShutdown(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 1), make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "done "+r.URL.Path)
	}))
	t.Cleanup(app.Close)
	env := redistest.New(t)
	maxActive := 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := New(ctx, Config{
		RedisURL: env.URL, Prefix: env.Prefix, AdminToken: testAdminToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Out: io.Discard,
		ProxyRooms: "*=shop", Rooms: map[string]rooms.RoomJSON{"shop": {MaxActive: &maxActive, Upstream: &app.URL}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, pub, adm) }()
	ts := &testServer{srv: srv, PublicURL: "http://" + pub.Addr().String()}
	cookie := admittedCookie(t, ts)

	answer := make(chan response, 1)
	go func() {
		answer <- sendWith(t, freshClient(t), http.MethodGet, ts.PublicURL+"/slow", map[string]string{"Cookie": cookie}, nil)
	}()
	<-started
	cancel()
	testwait.Until(t, 10*time.Second, "the listener to close", func() bool {
		c, err := net.Dial("tcp", pub.Addr().String())
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	close(release)
	if r := <-answer; r.Status != http.StatusOK || string(r.Body) != "done /slow" {
		t.Fatalf("the request under way at shutdown: %d %q", r.Status, r.Body)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if srv.leanStats().LeanRequests == 0 {
		t.Fatal("the lean loop did not serve the request")
	}
}

// A room proxy's large answers are the upstream's: one address receiving many of them at once
// (a page's images) gets every one, on the lean loop and on net/http, where an API answer over the
// same bound would be refused.
func TestRoomProxyLargeAnswersAreNotRefused(t *testing.T) {
	t.Parallel()
	const size = 64 << 10
	release := make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/enter" {
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, _ = w.Write(make([]byte, size/2))
		http.NewResponseController(w).Flush()
		<-release
		_, _ = w.Write(make([]byte, size/2))
	}))
	t.Cleanup(app.Close)
	ts := proxyRoomServer(t, app.URL, func(c *Config) { c.LargeResponseBytes, c.MaxLargeResponsesPerClient = 1024, 1 })
	plain := httptest.NewServer(ts.srv.PublicHandler())
	t.Cleanup(plain.Close)
	cookie := map[string]string{"Cookie": admittedCookie(t, ts)}
	const each = 3
	answers := make(chan response, 2*each)
	for _, base := range []string{ts.PublicURL, plain.URL} {
		for i := range each {
			go func() {
				answers <- sendWith(t, freshClient(t), http.MethodGet, fmt.Sprintf("%s/image%d", base, i), cookie, nil)
			}()
		}
	}
	testwait.Until(t, 10*time.Second, "every answer to start", func() bool { return publicInFlight(t, ts) == 2*each })
	close(release)
	for range 2 * each {
		if r := <-answers; r.Status != http.StatusOK || len(r.Body) != size {
			t.Fatalf("a large proxied answer: %d, %d bytes", r.Status, len(r.Body))
		}
	}
}
