package waitroom_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/rawhttp"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// TestLeanLoopSmugglingAttempts sends hostile byte streams to a room's proxy served by a
// ProxyServer and to the same proxy served by net/http alone, each with its own (identical)
// upstream, and requires the same answers and the same requests at the upstream: every stream
// is either served the same by the lean loop or handed to net/http, which answers it as before.
// Each stream carries an admitted visitor's pass (so the lean loop would serve it if it took it)
// and ends with a request that closes the connection.
func TestLeanLoopSmugglingAttempts(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	// No keep-alive during the test: the pass alone decides, so both sides see the same room
	// whatever the order in which the cases run.
	c := newClient(t, env, waitroom.Config{TouchInterval: time.Hour})
	upLean, upPlain := rawhttp.NewEchoUpstream(t), rawhttp.NewEchoUpstream(t)
	newRoomNamed(t, c, "lean7", waitroom.RoomConfig{MaxActive: 10, Upstream: upLean.URL})
	newRoomNamed(t, c, "net7", waitroom.RoomConfig{MaxActive: 10, Upstream: upPlain.URL})
	roomLean, roomPlain := mustRoom(t, c, "lean7"), mustRoom(t, c, "net7")
	lean := serveProxy(t, roomLean, nil)
	plain := httptest.NewServer(waitroom.Proxy(roomPlain))
	t.Cleanup(plain.Close)
	passLean, passPlain := admittedCookie(t, lean.URL), admittedCookie(t, plain.URL)

	cases := rawhttp.HostileStreams()
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fill := func(room, pass string) string {
				s := strings.ReplaceAll(raw, "PASS", pass)
				return strings.ReplaceAll(s, "ROOM", room)
			}
			gotLean := rawhttp.Exchange(t, hostOf(t, lean.URL), fill("lean7", passLean))
			gotPlain := rawhttp.Exchange(t, hostOf(t, plain.URL), fill("net7", passPlain))
			if !slices.Equal(normalizeRoom(gotLean, "lean7"), normalizeRoom(gotPlain, "net7")) {
				t.Fatalf("answers differ\nlean loop: %q\nnet/http:  %q", gotLean, gotPlain)
			}
			if len(gotPlain) == 0 && name != "truncated" {
				t.Fatalf("no answer at all: %q", gotPlain)
			}
		})
	}
	t.Cleanup(func() {
		if l, p := upLean.Requests(), upPlain.Requests(); !sameMultiset(l, p) {
			t.Errorf("the upstreams read different requests\nlean loop: %q\nnet/http:  %q", l, p)
		}
		if n := lean.Server.Stats().LeanRequests; n < 8 {
			t.Errorf("the lean loop served %d requests: the comparison did not exercise it", n)
		}
		// A request inside a body stays a body.
		if !slices.ContainsFunc(upLean.Requests(), func(r string) bool { return strings.HasPrefix(r, `POST /form body="GET /smuggled`) }) {
			t.Errorf("the body holding a request did not reach the upstream as a body: %q", upLean.Requests())
		}
	})
}

func mustRoom(t *testing.T, c *waitroom.Client, name string) *waitroom.Room {
	t.Helper()
	r, err := c.Room(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sameMultiset(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// normalizeRoom replaces the room's name in answers (cookie names, messages) so two rooms'
// answers compare.
func normalizeRoom(answers []string, room string) []string {
	out := make([]string, len(answers))
	for i, a := range answers {
		out[i] = strings.ReplaceAll(a, room, "ROOM")
	}
	return out
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// admittedCookie admits a new visitor at siteURL and returns its Cookie header (visitor cookie
// and pass).
func admittedCookie(t *testing.T, siteURL string) string {
	t.Helper()
	b := browser(t)
	if r := do(t, b, http.MethodGet, siteURL+"/enter", nil); r.code != http.StatusOK {
		t.Fatalf("enter: %d %q", r.code, r.body)
	}
	u, _ := url.Parse(siteURL)
	var parts []string
	for _, ck := range b.Jar.Cookies(u) {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	return strings.Join(parts, "; ")
}
