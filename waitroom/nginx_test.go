package waitroom_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/nginxtest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// startNginx runs the example config deploy/nginx/waitroom.conf with a real nginx, pointed at the
// given Sluice and app addresses, and returns its base URL. A missing nginx fails the test.
func startNginx(t *testing.T, sluiceAddr, appAddr string) string {
	t.Helper()
	example, err := os.ReadFile(filepath.Join("..", "deploy", "nginx", "waitroom.conf"))
	if err != nil {
		t.Fatal(err)
	}
	listen, _ := nginxtest.Run(t, 256, func(listen string) (httpBlock string, files map[string]string) {
		conf := strings.NewReplacer(
			"server 127.0.0.1:7777;", "server "+sluiceAddr+";",
			"server 127.0.0.1:8080;", "server "+appAddr+";",
			"listen 8000;", "listen "+listen+";",
		).Replace(string(example))
		if conf == string(example) {
			t.Fatal("the example config no longer has the addresses the test replaces")
		}
		return "include %[1]s/waitroom.conf;", map[string]string{"waitroom.conf": conf}
	})
	return "http://" + listen
}

// TestNginxAuthRequest runs deployment c end to end: nginx with the example config, the room's
// routes, and an app behind nginx.
func TestNginxAuthRequest(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	site := nginxSite(t, c, waitroom.RoomConfig{MaxActive: 1})

	alice, bob := browser(t), browser(t)
	// Alice's first request gets the waiting page with her visitor cookie and nobody in line;
	// her next one, first in an empty room, is let through.
	r := doOnce(t, alice, "GET", site+"/products?id=7", nil)
	if r.code != 200 || !strings.Contains(r.body, `"state":"entering"`) || !strings.Contains(r.header.Get("Set-Cookie"), "sluice_visitor=") {
		t.Fatalf("alice's first request: %d %v %q", r.code, r.header, r.body)
	}
	if r := do(t, alice, "GET", site+"/products?id=7", nil); r.code != 200 || !strings.Contains(r.body, "the upstream page /products") {
		t.Fatalf("alice with her pass: %d %q", r.code, r.body)
	}
	// Bob waits: the waiting page at the URL he asked for.
	r = do(t, bob, "GET", site+"/cart", nil)
	if r.code != 200 || !strings.Contains(r.body, `id="position">1<`) || !strings.Contains(r.body, `"next":"/cart"`) {
		t.Fatalf("bob's waiting page: %d %q", r.code, r.body)
	}
	if s := statusOf(t, do(t, bob, "GET", site+"/v1/rooms/shop/status", jsonPoll)); s.State != "waiting" || s.Position != 1 {
		t.Fatalf("bob's status through nginx: %+v", s)
	}
	if r := do(t, bob, "GET", site+"/cart", nil); r.code != 200 || strings.Contains(r.body, "upstream page") {
		t.Fatalf("bob got in while alice holds the slot: %d %q", r.code, r.body)
	}
	// Alice leaves; Bob's next request is let through by the check, with his new pass passed on.
	if r := do(t, alice, "POST", site+"/v1/rooms/shop/release", nil); !strings.Contains(r.body, `"released":true`) {
		t.Fatalf("alice's release: %d %q", r.code, r.body)
	}
	r = do(t, bob, "GET", site+"/cart", nil)
	if r.code != 200 || !strings.Contains(r.body, "the upstream page /cart") || !strings.Contains(r.header.Get("Set-Cookie"), "sluice_pass_shop=") {
		t.Fatalf("bob after alice left: %d %v %q", r.code, r.header, r.body)
	}
	if r := do(t, bob, "GET", site+"/checkout", nil); r.code != 200 || !strings.Contains(r.body, "the upstream page /checkout") {
		t.Fatalf("bob with his pass: %d %q", r.code, r.body)
	}
	if r := do(t, alice, "GET", site+"/products", nil); strings.Contains(r.body, "upstream page") {
		t.Fatalf("alice got in after her release: %d %q", r.code, r.body)
	}
}

// behindLoopbackProxy is a Config.ClientAddr for a room behind the nginx of these tests: the
// last address of X-Forwarded-For that is not loopback (nginx appends its client's), as a server
// with trusted_proxies = 127.0.0.1 reads it.
func behindLoopbackProxy(r *http.Request) string {
	hops := strings.Split(r.Header.Get("X-Forwarded-For"), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		if a, err := netip.ParseAddr(strings.TrimSpace(hops[i])); err == nil && !a.IsLoopback() {
			return a.String()
		}
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	return host
}

// nginxSite runs the example config in front of a room "shop" of c (created with cfg) and an
// app, and returns nginx's base URL.
func nginxSite(t *testing.T, c *waitroom.Client, cfg waitroom.RoomConfig) string {
	t.Helper()
	if _, err := c.SetRoom(context.Background(), "shop", cfg); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	sluice := httptest.NewServer(mux)
	t.Cleanup(sluice.Close)
	app := newUpstream(t)
	return startNginx(t, sluice.Listener.Addr().String(), app.Listener.Addr().String())
}

// TestNginxCookielessFloodAndAddressLimit: behind nginx, 10,000 requests without cookies leave
// the line as it was; one address's burst of new visitors (each with its cookie) is held to the
// address's limit, read from nginx's X-Forwarded-For.
func TestNginxCookielessFloodAndAddressLimit(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	const limit = 5
	c := newClient(t, env, waitroom.Config{ArrivalsPerMinute: limit, ClientAddr: behindLoopbackProxy, PollsPerMinute: 100_000})
	site := nginxSite(t, c, waitroom.RoomConfig{MaxActive: 1})
	room, _ := c.Room("shop")
	do(t, browser(t), "GET", site+"/products", nil) // holds the slot

	const flood, parallel = 10_000, 8
	tr := &http.Transport{MaxIdleConnsPerHost: parallel}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var entering atomic.Int64
	for w := range parallel {
		wg.Go(func() {
			for i := w; i < flood; i += parallel {
				path := []string{"/cart", "/v1/rooms/shop/status", "/v1/rooms/shop/wait?next=/cart"}[i%3]
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, site+path, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if strings.Contains(string(body), `"state":"entering"`) {
					entering.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if st, err := room.Stats(context.Background()); err != nil || st.Active != 1 || st.Waiting != 0 || st.Admitted != 1 {
		t.Fatalf("after %d cookieless requests (%d answered entering): %+v %v", flood, entering.Load(), st, err)
	}
	if entering.Load() != flood {
		t.Fatalf("%d of %d answered entering", entering.Load(), flood)
	}

	// One address, many new visitors, each keeping its cookie: held to the limit.
	joined := 0
	start := time.Now()
	for range 20 {
		b := browser(t)
		s := statusOf(t, do(t, b, "GET", site+"/v1/rooms/shop/status", map[string]string{"X-Forwarded-For": "203.0.113.9"}))
		if s.State == "waiting" {
			joined++
		}
	}
	if most := limit + int(time.Since(start)/(time.Minute/limit)); joined < limit || joined > most {
		t.Fatalf("20 new visitors of one address: %d joined, want %d", joined, limit)
	}
	if s := statusOf(t, do(t, browser(t), "GET", site+"/v1/rooms/shop/status", map[string]string{"X-Forwarded-For": "198.51.100.3"})); s.State != "waiting" {
		t.Fatalf("a visitor of another address: %+v", s)
	}
}
