package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestRoomProxyFloodAndAddressLimit runs flood-proof entry in deployment a (the server's room
// proxy): cookieless requests leave the line as it was, and one client address, read from
// X-Forwarded-For only because the request came from a trusted proxy, puts at most its arrival
// limit of new visitors in line, while another address still gets in line.
func TestRoomProxyFloodAndAddressLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	ts := newTestServer(t, func(c *Config) {
		c.ProxyRooms = "*=shop"
		c.RoomArrivalsPerMinute = limit
		c.TrustedProxies = "127.0.0.1"
	})
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 1, "upstream": "http://127.0.0.1:9/"}), http.StatusCreated, "")
	line := func() (active, waiting int) {
		t.Helper()
		var v struct {
			Stats struct{ Active, Waiting int }
		}
		ts.adminDo(t, http.MethodGet, "/v1/rooms/shop", nil).JSON(t, &v)
		return v.Stats.Active, v.Stats.Waiting
	}
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }

	for i := range 500 {
		if r := sendWith(t, http.DefaultClient, http.MethodGet, ts.PublicURL+"/products", from(fmt.Sprintf("198.51.100.%d", i%250)), nil); r.Status != http.StatusServiceUnavailable {
			t.Fatalf("cookieless request %d: %d", i, r.Status)
		}
	}
	if active, waiting := line(); active != 0 || waiting != 0 {
		t.Fatalf("after 500 cookieless requests: %d active, %d waiting, want none", active, waiting)
	}

	// One address: a visitor takes the place, then new visitors join the line up to the limit.
	limited := 0
	for range limit + 4 {
		r := newVisitor(t).do(t, http.MethodGet, ts.PublicURL+"/products", from("203.0.113.7"))
		if r.Status == http.StatusTooManyRequests {
			limited++
		}
	}
	if active, waiting := line(); active+waiting != limit || limited != 4 {
		t.Fatalf("one address's %d new visitors: %d active, %d waiting, %d limited; want %d in the room", limit+4, active, waiting, limited, limit)
	}
	// Another address is not held by the first one's limit.
	if r := newVisitor(t).do(t, http.MethodGet, ts.PublicURL+"/products", from("203.0.113.8")); r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Header.Get("Sluice-Room"), "waiting") {
		t.Fatalf("a visitor from another address: %d %v", r.Status, r.Header)
	}
}
