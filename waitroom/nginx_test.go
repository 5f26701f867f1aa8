package waitroom_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	ctx := context.Background()
	if _, err := c.SetRoom(ctx, "shop", waitroom.RoomConfig{MaxActive: 1}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	sluice := httptest.NewServer(mux)
	t.Cleanup(sluice.Close)
	app := newUpstream(t)
	site := startNginx(t, sluice.Listener.Addr().String(), app.Listener.Addr().String())

	alice, bob := browser(t), browser(t)
	// Alice, first in an empty room: the waiting page admits her at once and sends her back.
	r := do(t, alice, "GET", site+"/products?id=7", nil)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/products?id=7" {
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
