package waitroom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// upstream is a real HTTP server standing for the protected site. It counts the requests in
// flight and the most there ever were, and frees the visitor's slot when asked to (?release=1).
type upstream struct {
	*httptest.Server
	inFlight, maxInFlight, hits atomic.Int64
	hold                        chan struct{} // when non-nil, requests wait for it to close
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.inFlight.Add(1)
		defer u.inFlight.Add(-1)
		for {
			m := u.maxInFlight.Load()
			if n <= m || u.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		u.hits.Add(1)
		if u.hold != nil {
			<-u.hold
		}
		if r.URL.Query().Get("release") == "1" {
			w.Header().Set("Sluice-Room", "release")
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body><h1 id=upstream>the upstream page "+r.URL.Path+"</h1></body></html>")
	}))
	t.Cleanup(u.Close)
	return u
}

// middlewareSite serves room through Middleware in front of a new upstream.
func middlewareSite(t *testing.T, room *waitroom.Room) (*upstream, *httptest.Server) {
	t.Helper()
	up := newUpstream(t)
	site := httptest.NewServer(waitroom.Middleware(room, up.Config.Handler))
	t.Cleanup(site.Close)
	return up, site
}

// browser is an HTTP client with a cookie jar: one visitor (all its tabs).
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type response struct {
	code   int
	header http.Header
	body   string
}

// do sends a request as a browser would: a first answer that hands the browser its visitor
// cookie (state "entering": the page polls at once, or refreshes without JavaScript) is followed
// by the request again, which joins the line.
func do(t *testing.T, c *http.Client, method, url string, header map[string]string) response {
	t.Helper()
	r := doOnce(t, c, method, url, header)
	if strings.Contains(r.header.Get("Set-Cookie"), "sluice_visitor=") {
		r = doOnce(t, c, method, url, header)
	}
	return r
}

// enterOnce is a new visitor's arrival without a cookie jar: its first request gets the visitor
// cookie, and the answer to the second, which carries it, is returned.
func enterOnce(client *http.Client, url string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	for _, ck := range resp.Cookies() {
		req.AddCookie(ck)
	}
	return client.Do(req)
}

// doOnce sends one request.
func doOnce(t *testing.T, c *http.Client, method, url string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}

func statusOf(t *testing.T, r response) waitroom.StatusJSON {
	t.Helper()
	var s waitroom.StatusJSON
	if err := json.Unmarshal([]byte(r.body), &s); err != nil {
		t.Fatalf("status %d body %q: %v", r.code, r.body, err)
	}
	return s
}

var jsonPoll = map[string]string{"Accept": "application/json", waitroom.PollHeader: "1"}

func TestMiddlewareAdmitsWaitsAndReleases(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, waitroom.Config{})
		room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
		_, site := middlewareSite(t, room)

		alice, bob := browser(t), browser(t)
		if r := do(t, alice, "GET", site.URL+"/shop", nil); r.code != 200 || !strings.Contains(r.body, "upstream page /shop") {
			t.Fatalf("alice: %d %q", r.code, r.body)
		}
		r := do(t, bob, "GET", site.URL+"/shop", nil)
		if r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, `id="position">1<`) || r.header.Get("Retry-After") == "" {
			t.Fatalf("bob's waiting page: %d %v %q", r.code, r.header, r.body)
		}
		// JSON for apps, and the page's poll. Before anyone came in from the line, the ETA goes by
		// the settings: one place freed at least once a session_timeout (5 minutes).
		if s := statusOf(t, do(t, bob, "GET", site.URL+"/shop", map[string]string{"Accept": "application/json"})); s.State != "waiting" || s.Position != 1 || s.ETASeconds == nil || *s.ETASeconds != 300 {
			t.Fatalf("bob's JSON status: %+v", s)
		}
		// Alice's requests pass on her pass alone; her last one tells the room she is done.
		for range 3 {
			if r := do(t, alice, "GET", site.URL+"/cart", nil); r.code != 200 {
				t.Fatalf("alice with a pass: %d", r.code)
			}
		}
		if r := do(t, alice, "GET", site.URL+"/checkout?release=1", nil); r.code != 200 || r.header.Get("Sluice-Room") != "" {
			t.Fatalf("alice's release: %d %v", r.code, r.header)
		}
		if s := statusOf(t, do(t, bob, "GET", site.URL+"/shop", jsonPoll)); s.State != "admitted" {
			t.Fatalf("bob after alice released: %+v", s)
		}
		if r := do(t, bob, "GET", site.URL+"/shop", nil); r.code != 200 {
			t.Fatalf("bob with his pass: %d", r.code)
		}
		// Alice's pass cookie was removed with the release: she queues again.
		if r := do(t, alice, "GET", site.URL+"/cart", nil); r.code != http.StatusServiceUnavailable {
			t.Fatalf("alice after her release: %d", r.code)
		}
		if got := room.Counters(); got.Released != 1 {
			t.Fatalf("counters %+v, want 1 release", got)
		}
	})
}

func TestRefreshAndSecondTabKeepThePlace(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, waitroom.Config{})
		room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
		_, site := middlewareSite(t, room)

		do(t, browser(t), "GET", site.URL+"/", nil) // takes the slot
		visitors := make([]*http.Client, 4)
		for i := range visitors {
			visitors[i] = browser(t)
			if s := statusOf(t, do(t, visitors[i], "GET", site.URL+"/", jsonPoll)); s.Position != i+1 {
				t.Fatalf("visitor %d: %+v", i, s)
			}
		}
		// Refreshes and other tabs (other pages, the same cookies) keep each place; a visitor
		// without cookies (another person) goes to the back.
		for round := range 3 {
			for i, v := range visitors {
				if s := statusOf(t, do(t, v, "GET", site.URL+fmt.Sprintf("/tab%d", round), jsonPoll)); s.Position != i+1 || s.Length != len(visitors) {
					t.Fatalf("round %d visitor %d: %+v", round, i, s)
				}
			}
		}
		if s := statusOf(t, do(t, browser(t), "GET", site.URL+"/", jsonPoll)); s.Position != len(visitors)+1 {
			t.Fatalf("newcomer: %+v", s)
		}
		// A forged visitor cookie is a new visitor, not someone else's place.
		forged := browser(t)
		forged.Jar.SetCookies(mustURL(t, site.URL), []*http.Cookie{{Name: "sluice_visitor", Value: "v1.AAAAAAAAAAAAAAAAAAAAAA.AAAA"}})
		if s := statusOf(t, do(t, forged, "GET", site.URL+"/", jsonPoll)); s.Position != len(visitors)+2 {
			t.Fatalf("forged visitor: %+v", s)
		}
	})
}

func TestPassForgeryExpiryAndRotation(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	oldKey, newKey := testKey(), testKey()
	ctx := context.Background()
	before := newClient(t, env, waitroom.Config{PassKeys: [][]byte{oldKey}})
	room := newRoom(t, before, waitroom.RoomConfig{MaxActive: 10, SessionTimeout: 5 * time.Second, PassTTL: 3 * time.Second})
	st := arrive(t, room, "alice")
	if _, ok := room.CheckPass(st.Pass); !ok {
		t.Fatal("a fresh pass was refused")
	}
	// Forgeries: another room, another visitor, a later expiry, a flipped mac byte.
	other, err := before.Room("other")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.CheckPass(st.Pass); ok {
		t.Error("a pass of room r was accepted by room other")
	}
	parts := strings.Split(st.Pass, ".")
	for name, forged := range map[string]string{
		"visitor": strings.Join([]string{parts[0], "Ym9i", parts[2], parts[3]}, "."),
		"expiry":  strings.Join([]string{parts[0], parts[1], fmt.Sprint(time.Now().Add(time.Hour).UnixMilli()), parts[3]}, "."),
		"mac":     strings.Join([]string{parts[0], parts[1], parts[2], flip(parts[3])}, "."),
		"empty":   "",
		"garbage": "v1.a.b.c",
	} {
		if _, ok := room.CheckPass(forged); ok {
			t.Errorf("forged %s accepted", name)
		}
	}
	// Rotation: a client with the new key first and the old one second accepts both; one with
	// only the new key refuses the old pass; passes it signs carry the new key.
	rotating := newClient(t, env, waitroom.Config{PassKeys: [][]byte{newKey, oldKey}})
	rr, _ := rotating.Room("r")
	if _, ok := rr.CheckPass(st.Pass); !ok {
		t.Error("the old key's pass was refused during rotation")
	}
	after := newClient(t, env, waitroom.Config{PassKeys: [][]byte{newKey}})
	ra, _ := after.Room("r")
	if _, ok := ra.CheckPass(st.Pass); ok {
		t.Error("the old key's pass was accepted after the rotation ended")
	}
	fresh := arrive(t, rr, "bob")
	if _, ok := ra.CheckPass(fresh.Pass); !ok {
		t.Error("a pass signed during rotation was refused by the new key")
	}
	// Expiry: the pass stops working by itself.
	testwait.UntilNil(t, time.Minute, func() error {
		if _, ok := room.CheckPass(st.Pass); ok {
			return errNotYet
		}
		return nil
	})
	_ = ctx
}

func flip(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}

func mustURL(t *testing.T, s string) *urlT {
	t.Helper()
	u, err := parseURL(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestHandlerStatusCheckReleaseAndPage(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, waitroom.Config{})
		newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
		mux := http.NewServeMux()
		c.Handler(waitroom.HandlerConfig{}).Register(mux)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)

		a, b := browser(t), browser(t)
		// nginx's auth_request: no cookies yet, 401; the waiting page admits a into the empty room
		// and leads it on; then check says 200 on the pass.
		if r := doOnce(t, a, "GET", srv.URL+"/v1/rooms/r/check", nil); r.code != 401 {
			t.Fatalf("check without cookies: %d", r.code)
		}
		if r := do(t, a, "GET", srv.URL+"/v1/rooms/r/wait?next=/app", nil); r.code != http.StatusSeeOther || r.header.Get("Location") != "/app" {
			t.Fatalf("wait page of an admitted visitor: %d %v", r.code, r.header)
		}
		if r := do(t, a, "GET", srv.URL+"/v1/rooms/r/check", nil); r.code != 200 {
			t.Fatalf("check with a pass: %d", r.code)
		}
		// b waits: the page in Chinese, JSON status, check 401.
		r := do(t, b, "GET", srv.URL+"/v1/rooms/r/wait?next=https://evil.example/", map[string]string{"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
		if r.code != 200 || !strings.Contains(r.body, "您正在排队") || !strings.Contains(r.body, `lang="zh"`) || r.header.Get("Content-Language") != "zh" {
			t.Fatalf("chinese page: %d %q", r.code, r.body)
		}
		if strings.Contains(r.body, "evil.example") {
			t.Fatal("the page leads to another site")
		}
		if r := do(t, b, "GET", srv.URL+"/v1/rooms/r/wait", map[string]string{"Accept-Language": "en-US,en;q=0.9"}); !strings.Contains(r.body, "You are in line") {
			t.Fatalf("english page: %q", r.body)
		}
		s := statusOf(t, do(t, b, "GET", srv.URL+"/v1/rooms/r/status", nil))
		if s.State != "waiting" || s.Position != 1 || s.Length != 1 || s.MaxActive != 1 || s.Active != 1 || s.PollAfterMs <= 0 {
			t.Fatalf("status: %+v", s)
		}
		if r := do(t, b, "GET", srv.URL+"/v1/rooms/r/check", nil); r.code != 401 {
			t.Fatalf("check of a waiting visitor: %d", r.code)
		}
		// a leaves; b's next check lets it in.
		if r := do(t, a, "POST", srv.URL+"/v1/rooms/r/release", nil); r.code != 200 || !strings.Contains(r.body, `"released":true`) {
			t.Fatalf("release: %d %q", r.code, r.body)
		}
		if r := do(t, b, "GET", srv.URL+"/v1/rooms/r/check", nil); r.code != 200 || !strings.Contains(r.header.Get("Set-Cookie"), "sluice_pass_r=") {
			t.Fatalf("check after the release: %d %v", r.code, r.header)
		}
		// Errors: unknown room, bad name.
		for _, path := range []string{"/v1/rooms/none/status", "/v1/rooms/bad%20name/status"} {
			r := do(t, b, "GET", srv.URL+path, nil)
			if r.code != 404 || !strings.Contains(r.body, `"code":"not_found"`) {
				t.Fatalf("%s: %d %q", path, r.code, r.body)
			}
		}
	})
}

func TestStatusPollsAreRateLimited(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{PollsPerMinute: 6})
	newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	do(t, browser(t), "GET", srv.URL+"/v1/rooms/r/status", nil)
	v := browser(t)
	limited := 0
	for range 10 {
		r := do(t, v, "GET", srv.URL+"/v1/rooms/r/status", nil)
		if r.code == http.StatusTooManyRequests {
			limited++
			if r.header.Get("Retry-After") == "" || !strings.Contains(r.body, `"rate_limited"`) {
				t.Fatalf("limited poll: %v %q", r.header, r.body)
			}
		}
	}
	// 6 a minute with bursts of 2: most of 10 quick polls are refused, and another visitor is not.
	if limited < 5 {
		t.Fatalf("%d of 10 quick polls limited", limited)
	}
	if r := do(t, browser(t), "GET", srv.URL+"/v1/rooms/r/status", nil); r.code != 200 {
		t.Fatalf("another visitor: %d", r.code)
	}
}

func TestProxyMode(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	up := newUpstream(t)
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, Upstream: up.URL})
	site := httptest.NewServer(waitroom.Proxy(room))
	t.Cleanup(site.Close)
	a, b := browser(t), browser(t)
	if r := do(t, a, "GET", site.URL+"/x", nil); r.code != 200 || !strings.Contains(r.body, "upstream page /x") {
		t.Fatalf("proxied: %d %q", r.code, r.body)
	}
	if r := do(t, b, "GET", site.URL+"/x", nil); r.code != 503 {
		t.Fatalf("second visitor: %d", r.code)
	}
	if r := do(t, a, "GET", site.URL+"/done?release=1", nil); r.code != 200 || r.header.Get("Sluice-Room") != "" {
		t.Fatalf("release through the proxy: %d %v", r.code, r.header)
	}
	if r := do(t, b, "GET", site.URL+"/x", nil); r.code != 200 {
		t.Fatalf("second visitor after the release: %d", r.code)
	}
}

// TestProxyUpstreamChange: a new upstream set at runtime gets the next request, and the proxy
// closes its connections to the previous one; an upstream that is down is a 502 with the
// registered code.
func TestProxyUpstreamChange(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	var mu sync.Mutex
	openA := 0
	a := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "A") }))
	a.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case http.StateNew:
			openA++
		case http.StateClosed:
			openA--
		}
	}
	a.Start()
	t.Cleanup(a.Close)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "B") }))
	t.Cleanup(b.Close)
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 10, Upstream: a.URL})
	site := httptest.NewServer(waitroom.Proxy(room))
	t.Cleanup(site.Close)
	visitor := browser(t)
	if r := do(t, visitor, "GET", site.URL+"/", nil); r.body != "A" {
		t.Fatalf("first upstream: %d %q", r.code, r.body)
	}
	newRoom(t, c, waitroom.RoomConfig{MaxActive: 10, Upstream: b.URL})
	if r := do(t, visitor, "GET", site.URL+"/", nil); r.body != "B" {
		t.Fatalf("after the change: %d %q", r.code, r.body)
	}
	testwait.Until(t, time.Minute, "no connection to the previous upstream left open", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return openA == 0
	})
	b.Close()
	r := do(t, visitor, "GET", site.URL+"/", nil)
	if r.code != http.StatusBadGateway || !strings.Contains(r.body, `"code":"upstream_unavailable"`) {
		t.Fatalf("upstream down: %d %q", r.code, r.body)
	}
}

func TestRoomTemplate(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, Language: "zh",
		Template: `<p>{{.Room}} {{.Lang}} #{{.Position}} of {{.Length}}, {{.ETA}}</p>`})
	site := httptest.NewServer(waitroom.Middleware(room, http.NotFoundHandler()))
	t.Cleanup(site.Close)
	do(t, browser(t), "GET", site.URL, nil)
	if r := do(t, browser(t), "GET", site.URL, map[string]string{"Accept-Language": "en"}); r.body != "<p>r zh #1 of 1, 约 5 分钟</p>" {
		t.Fatalf("room template: %q", r.body)
	}
}

// TestExactnessThroughHTTP sends 3,000 arrivals, 64 at a time, through two middleware instances
// (two "servers", each with its own client and Redis connections) in front of one upstream:
// the upstream never sees more visitors than max_active, and exactly max_active get in.
// TestExactnessTwoInstances holds the same with 10,000 arrivals through the library; here each
// arrival is two requests and a waiting page under the race detector, and 10,000 of them (twice,
// standalone and Cluster) took over ten minutes on a loaded machine without asserting more.
func TestExactnessThroughHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		const arrivals, maxActive, parallel = 3000, 40, 64
		keys := [][]byte{testKey()}
		up := newUpstream(t)
		hold := make(chan struct{})
		up.hold = hold
		var sites []*httptest.Server
		for i := range 2 {
			other := redistest.New(t)
			if env.Cluster {
				other = redistest.NewCluster(t)
			}
			other.Prefix = env.Prefix
			// Every arrival comes from one address: no per-address limit here.
			c := newClient(t, other, waitroom.Config{PassKeys: keys, ArrivalsPerMinute: -1})
			room, err := c.Room("r")
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				newRoom(t, c, waitroom.RoomConfig{MaxActive: maxActive})
			}
			site := httptest.NewServer(waitroom.Middleware(room, up.Config.Handler))
			t.Cleanup(site.Close)
			sites = append(sites, site)
		}
		// The held requests end with the test even when it fails before it lets them go: closing
		// the sites waits for every request in flight, and would wait forever.
		letGo := sync.OnceFunc(func() { close(hold) })
		t.Cleanup(letGo)
		tr := &http.Transport{MaxIdleConnsPerHost: parallel}
		t.Cleanup(tr.CloseIdleConnections)
		client := &http.Client{Transport: tr}
		var (
			wg                       sync.WaitGroup
			admitted, queued, failed atomic.Int64
			errMu                    sync.Mutex
			errs                     []error
		)
		next := make(chan int)
		for range parallel {
			wg.Go(func() {
				for i := range next {
					resp, err := enterOnce(client, sites[i%2].URL+"/")
					if err != nil {
						errMu.Lock()
						errs = append(errs, err)
						errMu.Unlock()
						failed.Add(1)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch resp.StatusCode {
					case http.StatusOK:
						admitted.Add(1)
					case http.StatusServiceUnavailable:
						queued.Add(1)
					}
				}
			})
		}
		// The admitted requests are held inside the upstream until every arrival has been
		// decided, so all admitted visitors are in flight at once.
		go func() {
			for i := range arrivals {
				next <- i
			}
			close(next)
		}()
		testwait.UntilNil(t, 5*time.Minute, func() error {
			if got := queued.Load() + failed.Load(); got < arrivals-maxActive {
				return fmt.Errorf("%d of %d decided", got, arrivals)
			}
			if up.inFlight.Load() < maxActive {
				return fmt.Errorf("%d in flight", up.inFlight.Load())
			}
			return nil
		})
		letGo()
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if admitted.Load() != maxActive || up.hits.Load() != maxActive || up.maxInFlight.Load() != maxActive {
			t.Fatalf("admitted %d, upstream hits %d, most in flight %d; want exactly %d each",
				admitted.Load(), up.hits.Load(), up.maxInFlight.Load(), maxActive)
		}
		if queued.Load() != arrivals-maxActive {
			t.Fatalf("%d sent to the waiting page, want %d", queued.Load(), arrivals-maxActive)
		}
	})
}
