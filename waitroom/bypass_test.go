package waitroom_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

const staffSecret = "staff-only-0123456789"

var bypassRules = waitroom.BypassRules{
	Paths:      []string{"/static/", "/healthz", "/assets/*.js"},
	UserAgents: []string{"UptimeRobot"},
	Secret:     staffSecret,
}

// TestBypassRules: paths, patterns, user agents and the staff secret (header or cookie) go past
// a full room without a place; everything else waits; nothing of it changes the line.
func TestBypassRules(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, Bypass: bypassRules})
	_, site := middlewareSite(t, room)
	do(t, browser(t), "GET", site.URL+"/", nil) // holds the slot

	for _, pass := range []struct {
		path   string
		header map[string]string
		cookie string
	}{
		{"/static/app.css", nil, ""},
		{"/healthz", nil, ""},
		{"/assets/app.js", nil, ""},
		{"/products", map[string]string{"User-Agent": "Mozilla/5.0 (compatible; uptimerobot/2.0)"}, ""},
		{"/products", map[string]string{waitroom.BypassHeader: staffSecret}, ""},
		{"/products", nil, staffSecret},
	} {
		b := browser(t)
		if pass.cookie != "" {
			b.Jar.SetCookies(mustURL(t, site.URL), []*http.Cookie{{Name: "sluice_bypass_r", Value: pass.cookie}})
		}
		if r := doOnce(t, b, "GET", site.URL+pass.path, pass.header); r.code != 200 || !strings.Contains(r.body, "upstream page "+pass.path) {
			t.Fatalf("%s %v %q: %d %q", pass.path, pass.header, pass.cookie, r.code, r.body)
		}
	}
	for _, wait := range []struct {
		path   string
		header map[string]string
	}{
		{"/staticx", nil},
		{"/assets/sub/app.js", nil},
		{"/products", map[string]string{"User-Agent": "Mozilla/5.0"}},
		{"/products", map[string]string{waitroom.BypassHeader: staffSecret + "x"}},
		{"/products", map[string]string{waitroom.BypassHeader: strings.ToUpper(staffSecret)}},
	} {
		if r := do(t, browser(t), "GET", site.URL+wait.path, wait.header); r.code != http.StatusServiceUnavailable || strings.Contains(r.body, "upstream page") {
			t.Fatalf("%s %v went past the room: %d", wait.path, wait.header, r.code)
		}
	}
	if got := room.Counters().Bypassed; got != 6 {
		t.Fatalf("counted %d bypassed requests, want 6", got)
	}
	if st, err := room.Stats(context.Background()); err != nil || st.Active != 1 || st.Waiting != 4 {
		t.Fatalf("stats %+v %v: want the holder and the four pages that waited (the asset never enqueues)", st, err)
	}
}

// TestNginxBypass: behind nginx the check lets the staff secret and the bypass paths through.
func TestNginxBypass(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	site := nginxSite(t, c, waitroom.RoomConfig{MaxActive: 1, Bypass: bypassRules})
	do(t, browser(t), "GET", site+"/products", nil) // holds the slot
	if r := doOnce(t, browser(t), "GET", site+"/cart", map[string]string{waitroom.BypassHeader: staffSecret}); r.code != 200 || !strings.Contains(r.body, "the upstream page /cart") {
		t.Fatalf("staff through nginx: %d %q", r.code, r.body)
	}
	if r := doOnce(t, browser(t), "GET", site+"/healthz", nil); r.code != 200 || !strings.Contains(r.body, "the upstream page /healthz") {
		t.Fatalf("health check through nginx: %d %q", r.code, r.body)
	}
	if r := do(t, browser(t), "GET", site+"/cart", map[string]string{waitroom.BypassHeader: "wrong-secret-0123456789"}); strings.Contains(r.body, "upstream page") {
		t.Fatalf("a wrong secret through nginx: %d %q", r.code, r.body)
	}
}

// TestBypassSettingsRefused: bad rules name their field and change nothing.
func TestBypassSettingsRefused(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	newRoom(t, c, waitroom.RoomConfig{MaxActive: 2, Bypass: bypassRules})
	for field, rules := range map[string]waitroom.BypassRules{
		"bypass.paths":       {Paths: []string{"static/"}},
		"bypass.user_agents": {UserAgents: []string{" "}},
		"bypass.secret":      {Secret: "short"},
	} {
		_, err := c.SetRoom(context.Background(), "r", waitroom.RoomConfig{MaxActive: 1, Bypass: rules})
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Fatalf("%s: %v", field, err)
		}
	}
	_, err := c.SetRoom(context.Background(), "r", waitroom.RoomConfig{MaxActive: 1, Bypass: waitroom.BypassRules{Paths: []string{"/a/[b"}}})
	if fe := (*sluice.FieldError)(nil); !errors.As(err, &fe) || fe.Field != "bypass.paths" {
		t.Fatalf("a bad pattern: %v", err)
	}
	if got, err := c.GetRoom(context.Background(), "r"); err != nil || got.MaxActive != 2 || got.Bypass.Secret != staffSecret || len(got.Bypass.Paths) != 3 {
		t.Fatalf("settings after refused changes: %+v %v", got, err)
	}
}
