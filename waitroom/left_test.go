package waitroom_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// waitingCount is the room's line length, read from Redis.
func waitingCount(t *testing.T, room *waitroom.Room) int {
	t.Helper()
	s, err := room.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.Waiting
}

// After the upstream releases alice, her browser's next requests (the favicon, an image, a click,
// a poll) are answered as left and put nobody in line; a forged left cookie does not count; once
// the window is over she queues again. Asset requests without a pass never enqueue.
func TestReleaseIsFinalAndAssetsNeverEnqueue(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, waitroom.Config{LeftWindow: 2 * time.Second})
		room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
		_, site := middlewareSite(t, room)

		alice, bob := browser(t), browser(t)
		if r := do(t, alice, "GET", site.URL+"/shop", nil); r.code != 200 {
			t.Fatalf("alice: %d", r.code)
		}
		if r := do(t, bob, "GET", site.URL+"/shop", nil); r.code != http.StatusServiceUnavailable {
			t.Fatalf("bob: %d", r.code)
		}
		r := do(t, alice, "GET", site.URL+"/checkout?release=1", nil)
		if r.code != 200 || !strings.Contains(strings.Join(r.header.Values("Set-Cookie"), " "), "sluice_left_r=") {
			t.Fatalf("alice's release: %d %v", r.code, r.header)
		}
		for _, req := range []struct {
			path   string
			header map[string]string
		}{
			{"/favicon.ico", nil},
			{"/img/logo", map[string]string{"Sec-Fetch-Dest": "image"}},
			{"/cart", map[string]string{"Sec-Fetch-Dest": "document"}},
			{"/cart", nil},
		} {
			r := do(t, alice, "GET", site.URL+req.path, req.header)
			if r.code != http.StatusServiceUnavailable || strings.Contains(r.body, "upstream page") {
				t.Fatalf("alice's %s after her release: %d %q", req.path, r.code, r.body)
			}
		}
		if s := statusOf(t, do(t, alice, "GET", site.URL+"/cart", jsonPoll)); s.State != "left" {
			t.Fatalf("alice's poll after her release: %+v", s)
		}
		if r := do(t, alice, "GET", site.URL+"/cart", nil); !strings.Contains(r.body, "You have left the line") {
			t.Fatalf("alice's page after her release: %q", r.body)
		}
		if n := waitingCount(t, room); n != 1 {
			t.Fatalf("line of %d after alice's requests, want bob alone", n)
		}
		// New visitors' asset requests, with or without a cookie, never enqueue.
		carol := browser(t)
		for _, path := range []string{"/favicon.ico", "/app.js", "/style.CSS?v=3"} {
			r := do(t, carol, "GET", site.URL+path, nil)
			if r.code != http.StatusServiceUnavailable || r.header.Get("Set-Cookie") != "" {
				t.Fatalf("carol's %s: %d %v", path, r.code, r.header)
			}
		}
		if n := waitingCount(t, room); n != 1 {
			t.Fatalf("line of %d after asset requests, want bob alone", n)
		}
		// A forged left cookie does not keep anyone out of line.
		mallory := browser(t)
		mallory.Jar.SetCookies(mustURL(t, site.URL), []*http.Cookie{{Name: "sluice_left_r", Value: "v1.eA.99999999999999.AAAA"}})
		if s := statusOf(t, do(t, mallory, "GET", site.URL+"/shop", jsonPoll)); s.State != "waiting" || s.Position != 2 {
			t.Fatalf("mallory with a forged left cookie: %+v, want in line behind bob", s)
		}
		// After the window alice's browser queues like anyone else.
		testwait.UntilNil(t, time.Minute, func() error {
			if s := statusOf(t, do(t, alice, "GET", site.URL+"/cart", jsonPoll)); s.State != "waiting" {
				return fmt.Errorf("alice: %+v", s)
			}
			return nil
		})
	})
}

// The nginx endpoints: after POST /release, check says 401, the waiting page says "left" and
// status "left", and nobody is put in line; an asset behind nginx gets no place either.
func TestHandlerReleaseIsFinal(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	a := browser(t)
	if r := do(t, a, "GET", srv.URL+"/v1/rooms/r/wait?next=/app", nil); r.code != http.StatusSeeOther {
		t.Fatalf("a's first visit: %d", r.code)
	}
	if r := do(t, a, "POST", srv.URL+"/v1/rooms/r/release", nil); !strings.Contains(r.body, `"released":true`) {
		t.Fatalf("release: %q", r.body)
	}
	if r := do(t, a, "GET", srv.URL+"/v1/rooms/r/check", nil); r.code != 401 {
		t.Fatalf("check after the release: %d", r.code)
	}
	if r := do(t, a, "GET", srv.URL+"/v1/rooms/r/wait?next=/app", nil); r.code != 200 || !strings.Contains(r.body, "You have left the line") {
		t.Fatalf("wait after the release: %d %q", r.code, r.body)
	}
	if s := statusOf(t, do(t, a, "GET", srv.URL+"/v1/rooms/r/status", nil)); s.State != "left" {
		t.Fatalf("status after the release: %+v", s)
	}
	b := browser(t)
	if r := do(t, b, "GET", srv.URL+"/v1/rooms/r/wait", map[string]string{waitroom.NextHeader: "/favicon.ico"}); r.code != http.StatusServiceUnavailable {
		t.Fatalf("an asset behind nginx: %d", r.code)
	}
	if s, err := room.Stats(context.Background()); err != nil || s.Waiting != 0 || s.Active != 0 {
		t.Fatalf("stats %+v %v, want an empty room", s, err)
	}
}
