package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRoomBypassThroughTheServer: a room's bypass rules set over the admin API let a health check
// and staff past the proxy of a full room; the view never shows the secret; /metrics counts
// the bypassed requests; bad rules are refused naming the field.
func TestRoomBypassThroughTheServer(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "app page "+r.URL.Path)
	}))
	t.Cleanup(app.Close)
	ts := newTestServer(t, func(c *Config) { c.ProxyRooms = "*=shop" })
	const secret = "staff-only-0123456789"
	settings := map[string]any{"max_active": 1, "upstream": app.URL,
		"bypass": map[string]any{"paths": []string{"/healthz-app"}, "user_agents": []string{"UptimeRobot"}, "secret": secret}}
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", settings), http.StatusCreated, "")
	newVisitor(t).do(t, http.MethodGet, ts.PublicURL+"/products", nil) // holds the slot

	for _, header := range []map[string]string{nil, {"Sluice-Room-Bypass": secret}, {"User-Agent": "UptimeRobot/2.0"}} {
		path := "/healthz-app"
		if header != nil {
			path = "/checkout"
		}
		if r := sendWith(t, http.DefaultClient, http.MethodGet, ts.PublicURL+path, header, nil); r.Status != 200 || string(r.Body) != "app page "+path {
			t.Fatalf("%s %v: %d %s", path, header, r.Status, r.Body)
		}
	}
	if r := sendWith(t, http.DefaultClient, http.MethodGet, ts.PublicURL+"/checkout", map[string]string{"Sluice-Room-Bypass": "not-the-secret-0123"}, nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a wrong secret: %d", r.Status)
	}
	r := ts.adminDo(t, http.MethodGet, "/v1/rooms/shop", nil)
	if body := string(r.Body); strings.Contains(body, secret) || !strings.Contains(body, `"secret_set":true`) || !strings.Contains(body, `"paths":["/healthz-app"]`) {
		t.Fatalf("the room's view: %s", body)
	}
	metrics := string(do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Body)
	if !strings.Contains(metrics, `sluice_room_bypassed_total{room="shop"} 3`) {
		t.Fatalf("metrics lack 3 bypassed requests:\n%s", grepLines(metrics, "sluice_room_bypassed"))
	}
	for field, bypass := range map[string]any{
		"bypass.paths":       map[string]any{"paths": []string{"no-slash"}},
		"bypass.user_agents": map[string]any{"user_agents": []string{""}},
		"bypass.secret":      map[string]any{"secret": "short"},
		"bypass":             "everything",
	} {
		r := ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 2, "upstream": app.URL, "bypass": bypass})
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if r.ErrorField() != field {
			t.Errorf("bypass %v: field %q, want %q (%s)", bypass, r.ErrorField(), field, r.Body)
		}
	}
	if body := string(ts.adminDo(t, http.MethodGet, "/v1/rooms/shop", nil).Body); !strings.Contains(body, `"max_active":1`) || !strings.Contains(body, `"secret_set":true`) {
		t.Fatalf("settings after refused changes: %s", body)
	}
	// A PATCH of another field keeps the rules, the secret the view never shows included.
	wantStatus(t, ts.adminDo(t, http.MethodPatch, "/v1/rooms/shop", map[string]any{"queue_timeout": 120}), http.StatusOK, "")
	if r := sendWith(t, http.DefaultClient, http.MethodGet, ts.PublicURL+"/checkout", map[string]string{"Sluice-Room-Bypass": secret}, nil); r.Status != 200 {
		t.Fatalf("the secret after a PATCH of queue_timeout: %d %s", r.Status, r.Body)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
