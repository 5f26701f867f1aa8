package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server/rooms"
)

// visitor is a browser: an HTTP client with a cookie jar.
type visitor struct{ c *http.Client }

func newVisitor(t *testing.T) *visitor {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &visitor{&http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request as a browser would: an answer that hands out the visitor cookie (the
// waiting page's "entering", its first poll follows at once) is followed by the request again.
func (v *visitor) do(t *testing.T, method, url string, header map[string]string) response {
	t.Helper()
	r := sendWith(t, v.c, method, url, header, nil)
	if strings.Contains(r.Header.Get("Set-Cookie"), "sluice_visitor=") {
		r = sendWith(t, v.c, method, url, header, nil)
	}
	return r
}

type roomStatus struct {
	State    string `json:"state"`
	Position int    `json:"position"`
	Length   int    `json:"length"`
}

func (v *visitor) status(t *testing.T, base, room string) roomStatus {
	t.Helper()
	r := v.do(t, http.MethodGet, base+"/v1/rooms/"+room+"/status", nil)
	wantStatus(t, r, http.StatusOK, "")
	var s roomStatus
	r.JSON(t, &s)
	return s
}

type roomView struct {
	Name      string `json:"name"`
	MaxActive int    `json:"max_active"`
	Stats     *struct {
		Active        int   `json:"active"`
		Waiting       int   `json:"waiting"`
		AdmittedTotal int64 `json:"admitted_total"`
		ReleasedTotal int64 `json:"released_total"`
	} `json:"stats"`
}

func TestRoomsAdminAndVisitors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 1, "queue_timeout": 60})
	wantStatus(t, r, http.StatusCreated, "")
	r = ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 1, "queue_timeout": 60})
	wantStatus(t, r, http.StatusOK, "")
	for _, bad := range []struct {
		path  string
		body  any
		field string
	}{
		{"/v1/rooms/shop", map[string]any{}, "max_active"},
		{"/v1/rooms/shop", map[string]any{"max_active": 0}, "max_active"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "pass_ttl": 3600}, "pass_ttl"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "open_at": "tomorrow"}, "open_at"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "colour": "red"}, "colour"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "arrivals_per_minute": -5}, "arrivals_per_minute"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "challenge_above": -1}, "challenge_above"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "challenge_bits": 40}, "challenge_bits"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "challenge_wait": 0.5}, "challenge_wait"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "challenge_wait": "long"}, "challenge_wait"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "logo_url": "http://cdn.example/logo.png"}, "logo_url"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "site_name": "a\u0000b"}, "site_name"},
		{"/v1/rooms/shop", map[string]any{"max_active": 1, "language": "it"}, "language"},
		{"/v1/rooms/bad%20name", map[string]any{"max_active": 1}, "room"},
	} {
		r := ts.adminDo(t, http.MethodPut, bad.path, bad.body)
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if r.ErrorField() != bad.field {
			t.Errorf("PUT %s %v: field %q, want %q (%s)", bad.path, bad.body, r.ErrorField(), bad.field, r.Body)
		}
	}
	// Nothing changed.
	var kept map[string]any
	ts.adminDo(t, http.MethodGet, "/v1/rooms/shop", nil).JSON(t, &kept)
	if kept["queue_timeout"] != float64(60) || kept["challenge_bits"] != float64(16) || kept["arrivals_per_minute"] != float64(0) {
		t.Fatalf("settings after refused changes: %v", kept)
	}

	alice, bob := newVisitor(t), newVisitor(t)
	if s := alice.status(t, ts.PublicURL, "shop"); s.State != "admitted" {
		t.Fatalf("alice: %+v", s)
	}
	if s := bob.status(t, ts.PublicURL, "shop"); s.State != "waiting" || s.Position != 1 {
		t.Fatalf("bob: %+v", s)
	}
	r = ts.adminDo(t, http.MethodGet, "/v1/rooms", nil)
	wantStatus(t, r, http.StatusOK, "")
	var list struct {
		Rooms []roomView `json:"rooms"`
	}
	r.JSON(t, &list)
	if len(list.Rooms) != 1 || list.Rooms[0].Name != "shop" || list.Rooms[0].Stats == nil ||
		list.Rooms[0].Stats.Active != 1 || list.Rooms[0].Stats.Waiting != 1 {
		t.Fatalf("GET /v1/rooms = %s", r.Body)
	}
	// nginx's check: alice's pass is good, bob waits.
	wantStatus(t, alice.do(t, http.MethodGet, ts.PublicURL+"/v1/rooms/shop/check", nil), http.StatusOK, "")
	wantStatus(t, bob.do(t, http.MethodGet, ts.PublicURL+"/v1/rooms/shop/check", nil), http.StatusUnauthorized, "")
	// A runtime raise lets bob in at once.
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 2}), http.StatusOK, "")
	if s := bob.status(t, ts.PublicURL, "shop"); s.State != "admitted" {
		t.Fatalf("bob after the raise: %+v", s)
	}
	r = alice.do(t, http.MethodPost, ts.PublicURL+"/v1/rooms/shop/release", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"released":true`) {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	r = ts.adminDo(t, http.MethodGet, "/v1/rooms/shop", nil)
	var one roomView
	r.JSON(t, &one)
	if one.MaxActive != 2 || one.Stats.Active != 1 || one.Stats.AdmittedTotal != 2 || one.Stats.ReleasedTotal != 1 {
		t.Fatalf("GET /v1/rooms/shop = %s", r.Body)
	}
	// The waiting page, in Chinese.
	carol := newVisitor(t)
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 1}), http.StatusOK, "")
	r = carol.do(t, http.MethodGet, ts.PublicURL+"/v1/rooms/shop/wait?next=/x", map[string]string{"Accept-Language": "zh-CN"})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "您正在排队") {
		t.Fatalf("waiting page: %d %s", r.Status, r.Body)
	}
	// The metrics.
	r = ts.adminDo(t, http.MethodGet, "/metrics", nil)
	for _, want := range []string{`sluice_room_visitors{room="shop",state="active"} 1`, `sluice_room_max_active{room="shop"} 1`,
		`sluice_room_visitors_total{event="released",room="shop"} 1`} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Reset, then delete.
	wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/rooms/shop/reset", nil), http.StatusOK, "")
	r = ts.adminDo(t, http.MethodGet, "/v1/rooms/shop", nil)
	one = roomView{}
	r.JSON(t, &one)
	if one.Stats.Active != 0 || one.Stats.Waiting != 0 || one.Stats.AdmittedTotal != 0 {
		t.Fatalf("after reset: %s", r.Body)
	}
	wantStatus(t, ts.adminDo(t, http.MethodDelete, "/v1/rooms/shop", nil), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/rooms/shop", nil), http.StatusNotFound, "not_found")
	wantStatus(t, ts.adminDo(t, http.MethodDelete, "/v1/rooms/shop", nil), http.StatusNotFound, "not_found")
	wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/rooms/shop/reset", nil), http.StatusNotFound, "not_found")
	wantStatus(t, carol.do(t, http.MethodGet, ts.PublicURL+"/v1/rooms/shop/status", nil), http.StatusNotFound, "not_found")
}

func TestRoomProxyMode(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("done") == "1" {
			w.Header().Set("Sluice-Room", "release")
		}
		_, _ = io.WriteString(w, "app page "+r.URL.Path)
	}))
	t.Cleanup(app.Close)
	ts := newTestServer(t, func(c *Config) { c.ProxyRooms = "*=shop" })
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 1, "upstream": app.URL}), http.StatusCreated, "")
	a, b := newVisitor(t), newVisitor(t)
	if r := a.do(t, http.MethodGet, ts.PublicURL+"/products", nil); r.Status != 200 || string(r.Body) != "app page /products" {
		t.Fatalf("proxied: %d %s", r.Status, r.Body)
	}
	if r := b.do(t, http.MethodGet, ts.PublicURL+"/products", nil); r.Status != http.StatusServiceUnavailable || r.Header.Get("Sluice-Room") != "waiting" {
		t.Fatalf("second visitor: %d %v", r.Status, r.Header)
	}
	if r := a.do(t, http.MethodGet, ts.PublicURL+"/checkout?done=1", nil); r.Status != 200 || r.Header.Get("Sluice-Room") != "" {
		t.Fatalf("release through the proxy: %d %v", r.Status, r.Header)
	}
	if r := b.do(t, http.MethodGet, ts.PublicURL+"/products", nil); r.Status != 200 {
		t.Fatalf("second visitor after the release: %d %s", r.Status, r.Body)
	}
	// The server's own routes stay its own.
	wantStatus(t, do(t, http.MethodGet, ts.PublicURL+"/healthz", "", nil), http.StatusOK, "")
}

func TestRoomsFromConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "sluice.json")
	conf := `{"proxy_rooms": "*=shop", "rooms": {"shop": {"max_active": 3, "queue_timeout": 30, "language": "ja", "site_name": "Shop", "logo_url": "/logo.svg"}}}`
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSettings(SettingsSources{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rooms) != 1 || s.ProxyRooms != "*=shop" {
		t.Fatalf("settings: %+v", s.Config)
	}
	ts := newTestServer(t, func(c *Config) { c.Rooms = s.Rooms })
	r := ts.adminDo(t, http.MethodGet, "/v1/rooms/shop", nil)
	wantStatus(t, r, http.StatusOK, "")
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil || v["max_active"] != float64(3) || v["queue_timeout"] != float64(30) || v["language"] != "ja" ||
		v["site_name"] != "Shop" || v["logo_url"] != "/logo.svg" {
		t.Fatalf("room from the file: %s", r.Body)
	}
	// A bad room in the file is an error naming it.
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"rooms": {"shop": {"max_active": 3, "colour": 1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSettings(SettingsSources{File: bad}); err == nil || !strings.Contains(err.Error(), "shop") {
		t.Fatalf("bad room: %v", err)
	}
}

func TestWaitroomExampleConfigLoads(t *testing.T) {
	t.Parallel()
	s, err := LoadSettings(SettingsSources{File: "../deploy/sluice.waitroom.example.json"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Config.withDefaults().validate(); err != nil {
		t.Fatalf("the example config does not validate: %v", err)
	}
	if room, ok := s.Rooms["shop"]; !ok || room.MaxActive == nil || *room.MaxActive != 500 || s.ProxyRooms != "*=shop" {
		t.Fatalf("rooms %+v, proxy_rooms %q", s.Rooms, s.ProxyRooms)
	}
}

// TestRoomExactnessTwoServers: concurrent arrivals through two sluice servers sharing one Redis,
// both proxying to one upstream through the room: exactly max_active get in, and the upstream
// never has more of them in flight.
func TestRoomExactnessTwoServers(t *testing.T) {
	t.Parallel()
	const arrivals, maxActive, parallel = 3000, 25, 48
	var inFlight, most, hits atomic.Int64
	hold := make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		hits.Add(1)
		<-hold
		_, _ = io.WriteString(w, "in")
	}))
	t.Cleanup(app.Close)
	env := redistest.New(t)
	keys := "the-shared-pass-key-of-both-servers-0123456789"
	n := maxActive
	servers := []*testServer{}
	for range 2 {
		servers = append(servers, newTestServerOn(t, env, func(c *Config) {
			c.ProxyRooms = "*=shop"
			c.RoomPassKeys = keys
			c.RoomArrivalsPerMinute = -1 // every arrival comes from one address
			c.Rooms = map[string]rooms.RoomJSON{"shop": {MaxActive: &n, Upstream: &app.URL}}
		}))
	}
	// The held requests end with the test even when it fails before it lets them go: closing
	// the servers waits for every request in flight, and would wait forever.
	letGo := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(letGo)
	tr := &http.Transport{MaxIdleConnsPerHost: parallel}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	var admitted, waiting, failed atomic.Int64
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for i := range next {
				// A new visitor: the first answer hands out its cookie, the second request enters.
				var cookies []*http.Cookie
				var resp *http.Response
				var err error
				for attempt := range 2 {
					req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, servers[i%2].PublicURL+"/", nil)
					for _, ck := range cookies {
						req.AddCookie(ck)
					}
					if resp, err = client.Do(req); err != nil || attempt == 1 {
						break
					}
					cookies = resp.Cookies()
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					admitted.Add(1)
				case http.StatusServiceUnavailable:
					waiting.Add(1)
				default:
					failed.Add(1)
				}
			}
		})
	}
	go func() {
		for i := range arrivals {
			next <- i
		}
		close(next)
	}()
	testwait.Until(t, 5*time.Minute, "every arrival decided", func() bool {
		return waiting.Load()+failed.Load() >= arrivals-maxActive && inFlight.Load() >= maxActive
	})
	letGo()
	wg.Wait()
	if failed.Load() != 0 || admitted.Load() != maxActive || hits.Load() != maxActive || most.Load() != maxActive ||
		waiting.Load() != arrivals-maxActive {
		t.Fatalf("admitted %d, waiting %d, failed %d, upstream hits %d, most in flight %d; want %d admitted",
			admitted.Load(), waiting.Load(), failed.Load(), hits.Load(), most.Load(), maxActive)
	}
}
