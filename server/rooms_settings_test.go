package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server/rooms"
)

// roomSettings reads a room's settings (its GET answer without the live figures), as raw JSON
// members so a test can compare them whole.
func roomSettings(t *testing.T, ts *testServer, room string) map[string]json.RawMessage {
	t.Helper()
	r := ts.adminDo(t, http.MethodGet, "/v1/rooms/"+room, nil)
	wantStatus(t, r, http.StatusOK, "")
	var m map[string]json.RawMessage
	r.JSON(t, &m)
	delete(m, "stats")
	return m
}

func wantSetting(t *testing.T, m map[string]json.RawMessage, field, want string) {
	t.Helper()
	if got := string(m[field]); got != want {
		t.Errorf("%s = %s, want %s (settings %s)", field, got, want, mustJSON(m))
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// PATCH changes the fields sent and nothing else: the upstream and the line timeout set by a PUT
// stay; a null field goes back to its default.
func TestRoomPatchKeepsTheOtherSettings(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{
		"max_active": 2, "upstream": "http://127.0.0.1:9/", "queue_timeout": 30, "language": "zh",
		"template": "<p>{{.Position}}</p>",
	}), http.StatusCreated, "")
	r := ts.adminDo(t, http.MethodPatch, "/v1/rooms/shop", map[string]any{"max_active": 20})
	wantStatus(t, r, http.StatusOK, "")
	m := roomSettings(t, ts, "shop")
	wantSetting(t, m, "max_active", "20")
	wantSetting(t, m, "upstream", `"http://127.0.0.1:9/"`)
	wantSetting(t, m, "queue_timeout", "30")
	wantSetting(t, m, "language", `"zh"`)
	wantSetting(t, m, "template", `"<p>{{.Position}}</p>"`)

	wantStatus(t, ts.adminDo(t, http.MethodPatch, "/v1/rooms/shop", `{"queue_timeout": null, "fail_open": true}`), http.StatusOK, "")
	m = roomSettings(t, ts, "shop")
	wantSetting(t, m, "queue_timeout", "120")
	wantSetting(t, m, "fail_open", "true")
	wantSetting(t, m, "max_active", "20")

	wantStatus(t, ts.adminDo(t, http.MethodPatch, "/v1/rooms/nope", map[string]any{"max_active": 1}), http.StatusNotFound, "not_found")
	r = ts.adminDo(t, http.MethodPatch, "/v1/rooms/shop", `{"max_active": null}`)
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "max_active" {
		t.Errorf("PATCH max_active null: %s", r.Body)
	}
}

// Bad input to every field, through PUT and PATCH, is a 400 naming the field, and the room's
// settings stay as they were.
func TestRoomBadSettingsChangeNothing(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{
		"max_active": 3, "upstream": "http://127.0.0.1:9/", "queue_timeout": 30, "new_users_per_minute": 60,
	}), http.StatusCreated, "")
	before := mustJSON(roomSettings(t, ts, "shop"))
	for _, bad := range []struct {
		field string
		value any
	}{
		{"max_active", 0}, {"max_active", "many"}, {"max_active", 1.5},
		{"new_users_per_minute", -1}, {"new_users_per_minute", "x"},
		{"session_timeout", -5}, {"session_timeout", "5m"},
		{"queue_timeout", -1}, {"queue_timeout", 90000},
		{"pass_ttl", 3600}, {"pass_ttl", -1},
		{"upstream", "ftp://files"}, {"upstream", 5},
		{"open_at", "tomorrow"}, {"open_at", 1},
		{"template", "{{.Position"}, {"template", "<p>{{.Spot}}</p>"},
		{"language", "xx"}, {"language", true},
		{"fail_open", "yes"},
		{"arrivals_per_minute", -2}, {"challenge_above", -1}, {"challenge_bits", 99}, {"challenge_wait", 9999},
		{"colour", "red"},
		{"site_name", 5}, {"site_name", strings.Repeat("a", 101)},
		{"logo_url", "javascript:alert(1)"}, {"logo_url", "http://cdn.example/logo.png"},
		{"bypass", "everything"}, {"bypass", map[string]any{"paths": []string{"static/"}}},
		{"bypass", map[string]any{"user_agents": []string{" "}}}, {"bypass", map[string]any{"secret": "short"}},
	} {
		want := bad.field // a bypass rule's error names the rule: bypass.paths
		if rule, ok := bad.value.(map[string]any); ok {
			for name := range rule {
				want += "." + name
			}
		}
		for _, method := range []string{http.MethodPut, http.MethodPatch} {
			body := map[string]any{bad.field: bad.value}
			if method == http.MethodPut && bad.field != "max_active" {
				body["max_active"] = 3
			}
			r := ts.adminDo(t, method, "/v1/rooms/shop", body)
			if r.Status != http.StatusBadRequest || r.ErrorCode() != "invalid_argument" || r.ErrorField() != want {
				t.Errorf("%s %s=%v: %d %s, want 400 naming %s", method, bad.field, bad.value, r.Status, r.Body, want)
			}
			if bad.value == "<p>{{.Spot}}</p>" && !strings.Contains(string(r.Body), "Spot") {
				t.Errorf("%s: the template error does not name the field: %s", method, r.Body)
			}
		}
	}
	// A body that is no object: a null merge patch would mean "replace the room with nothing".
	for _, body := range []string{"null", "[]", `"x"`} {
		r := ts.adminDo(t, http.MethodPatch, "/v1/rooms/shop", body)
		if r.Status != http.StatusBadRequest || r.ErrorField() != "body" {
			t.Errorf("PATCH %s: %d %s, want 400 naming body", body, r.Status, r.Body)
		}
	}
	if after := mustJSON(roomSettings(t, ts, "shop")); after != before {
		t.Fatalf("bad input changed the room:\nbefore %s\nafter  %s", before, after)
	}
}

// A room served by the server's reverse proxy keeps its upstream: a PUT or PATCH that would drop
// it is refused and changes nothing; one that keeps it goes through.
func TestRoomProxiedKeepsItsUpstream(t *testing.T) {
	t.Parallel()
	up := "http://127.0.0.1:9/"
	one := 1
	ts := newTestServer(t, func(c *Config) {
		c.ProxyRooms = "*=shop"
		c.Rooms = map[string]rooms.RoomJSON{"shop": {MaxActive: &one, Upstream: &up}}
	})
	before := mustJSON(roomSettings(t, ts, "shop"))
	for _, tc := range []struct {
		method string
		body   any
	}{
		{http.MethodPut, map[string]any{"max_active": 20}},
		{http.MethodPut, map[string]any{"max_active": 20, "upstream": ""}},
		{http.MethodPatch, `{"upstream": null}`},
		{http.MethodPatch, map[string]any{"upstream": ""}},
	} {
		r := ts.adminDo(t, tc.method, "/v1/rooms/shop", tc.body)
		if r.Status != http.StatusConflict || r.ErrorCode() != "conflict" || r.ErrorField() != "upstream" {
			t.Errorf("%s %v: %d %s, want 409 conflict on upstream", tc.method, tc.body, r.Status, r.Body)
		}
	}
	if after := mustJSON(roomSettings(t, ts, "shop")); after != before {
		t.Fatalf("a refused change changed the room:\nbefore %s\nafter  %s", before, after)
	}
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 20, "upstream": up}), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodPatch, "/v1/rooms/shop", map[string]any{"max_active": 5}), http.StatusOK, "")
}

// Restarting an instance (another one on the same Redis, with the same config file) keeps a change
// made through the API; a field the file changed since takes the file's value, a field it no
// longer names goes back to its default, and a room new in the file is created.
func TestRoomsFileRestartKeepsALiveChange(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	withRooms := func(file string) func(*Config) {
		return func(c *Config) {
			var s Settings
			if err := loadRooms(json.RawMessage(file), &s); err != nil {
				t.Fatal(err)
			}
			c.Rooms = s.Rooms
		}
	}
	first := newTestServerOn(t, env, withRooms(`{"shop": {"max_active": 2, "queue_timeout": 60, "upstream": "http://127.0.0.1:9/"}}`))
	wantStatus(t, first.adminDo(t, http.MethodPatch, "/v1/rooms/shop", map[string]any{"max_active": 20}), http.StatusOK, "")

	second := newTestServerOn(t, env, withRooms(`{"shop": {"max_active": 2, "queue_timeout": 60, "upstream": "http://127.0.0.1:9/"}}`))
	m := roomSettings(t, second, "shop")
	wantSetting(t, m, "max_active", "20")
	wantSetting(t, m, "queue_timeout", "60")
	wantSetting(t, m, "upstream", `"http://127.0.0.1:9/"`)

	third := newTestServerOn(t, env, withRooms(`{"shop": {"max_active": 2, "queue_timeout": 90, "upstream": "http://127.0.0.1:9/"}}`))
	m = roomSettings(t, third, "shop")
	wantSetting(t, m, "max_active", "20")
	wantSetting(t, m, "queue_timeout", "90")

	fourth := newTestServerOn(t, env, withRooms(`{"shop": {"max_active": 2, "upstream": "http://127.0.0.1:9/"}, "outlet": {"max_active": 4}}`))
	m = roomSettings(t, fourth, "shop")
	wantSetting(t, m, "max_active", "20")
	wantSetting(t, m, "queue_timeout", "120")
	wantSetting(t, m, "upstream", `"http://127.0.0.1:9/"`)
	wantSetting(t, roomSettings(t, fourth, "outlet"), "max_active", "4")
	// The first instance, still running, sees the same settings.
	if a, b := mustJSON(roomSettings(t, first, "shop")), mustJSON(m); a != b {
		t.Fatalf("instances disagree:\n%s\n%s", a, b)
	}
}
