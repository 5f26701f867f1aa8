package waitroom_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// TestNginxReleaseHeader: behind the example nginx, the app's "Sluice-Room: release" frees the
// visitor's place (the next in line gets in), never reaches the browser, and leaves the browser
// marked as having left, so its favicon and its next click put it back in line. A forged pass, a
// client's own "Sluice-Room" header and a replay of the release free nobody else.
func TestNginxReleaseHeader(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	site := nginxSite(t, c, waitroom.RoomConfig{MaxActive: 1})
	room, _ := c.Room("shop")
	stats := func() waitroom.RoomStats {
		t.Helper()
		s, err := room.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	alice, bob, mallory := browser(t), browser(t), browser(t)
	if r := do(t, alice, "GET", site+"/products", nil); r.code != 200 || !strings.Contains(r.body, "the upstream page /products") {
		t.Fatalf("alice: %d %q", r.code, r.body)
	}
	if s := statusOf(t, do(t, bob, "GET", site+"/v1/rooms/shop/status", jsonPoll)); s.State != "waiting" || s.Position != 1 {
		t.Fatalf("bob before the release: %+v", s)
	}
	alicesCookies := alice.Jar.Cookies(mustURL(t, site))

	// Not the app's answer: a client's own "Sluice-Room: release" request header, or a forged
	// pass with the app's release, frees nothing.
	forged := forgedPass(t, alicesCookies)
	mallory.Jar.SetCookies(mustURL(t, site), []*http.Cookie{forged})
	if r := doOnce(t, mallory, "POST", site+"/v1/rooms/shop/release", nil); !strings.Contains(r.body, `"released":false`) {
		t.Fatalf("mallory's release with a forged pass: %d %q", r.code, r.body)
	}
	if r := do(t, mallory, "GET", site+"/checkout?release=1", map[string]string{"Sluice-Room": "release"}); strings.Contains(r.body, "upstream page") {
		t.Fatalf("mallory got in with a forged pass: %d %q", r.code, r.body)
	}
	if r := do(t, alice, "GET", site+"/cart", map[string]string{"Sluice-Room": "release"}); r.code != 200 || !strings.Contains(r.body, "the upstream page /cart") {
		t.Fatalf("alice with the header in her request: %d %q", r.code, r.body)
	}
	if s := stats(); s.Active != 1 || s.Waiting != 2 || s.Released != 0 {
		t.Fatalf("after the forged releases: %+v, want alice in, bob and mallory waiting", s)
	}

	// The app releases alice: she gets its page without the header, loses her pass and is marked
	// as having left.
	r := do(t, alice, "GET", site+"/checkout/done?release=1", nil)
	if r.code != 200 || !strings.Contains(r.body, "the upstream page /checkout/done") {
		t.Fatalf("alice's last page: %d %q", r.code, r.body)
	}
	if v := r.header.Values(waitroom.ReleaseHeader); len(v) != 0 {
		t.Fatalf("the browser saw %s: %q", waitroom.ReleaseHeader, v)
	}
	if v := r.header.Values(waitroom.LeftHeader); len(v) != 0 {
		t.Fatalf("the browser saw %s: %q", waitroom.LeftHeader, v)
	}
	cookies := strings.Join(r.header.Values("Set-Cookie"), "\n")
	if !strings.Contains(cookies, "sluice_left_shop=v") || !strings.Contains(cookies, "sluice_pass_shop=; Path=/; Max-Age=0") {
		t.Fatalf("alice's cookies after her release:\n%s", cookies)
	}
	// Her place goes to bob (the release follows the answer).
	testwait.UntilNil(t, 60*time.Second, func() error {
		if s := stats(); s.Released != 1 || s.Active != 0 {
			return fmt.Errorf("alice's place not freed: %+v", s)
		}
		return nil
	})
	if s := statusOf(t, do(t, bob, "GET", site+"/v1/rooms/shop/status", jsonPoll)); s.State != "admitted" {
		t.Fatalf("bob after alice's release: %+v", s)
	}
	if r := do(t, bob, "GET", site+"/cart", nil); r.code != 200 || !strings.Contains(r.body, "the upstream page /cart") {
		t.Fatalf("bob after alice's release: %d %q", r.code, r.body)
	}

	// Alice's browser asks for the favicon and follows a link: neither gets her back in line.
	if r := do(t, alice, "GET", site+"/favicon.ico", nil); r.code != http.StatusServiceUnavailable || strings.Contains(r.body, "upstream page") {
		t.Fatalf("alice's favicon after her release: %d %q", r.code, r.body)
	}
	if r := do(t, alice, "GET", site+"/products", nil); r.code != 200 || !strings.Contains(r.body, "You have left the line") {
		t.Fatalf("alice's click after her release: %d %q", r.code, r.body)
	}
	if s := stats(); s.Active != 1 || s.Waiting != 1 {
		t.Fatalf("after alice's requests: %+v, want bob in and mallory waiting", s)
	}

	// A replay of alice's release (her cookies from before it) frees nothing more: bob keeps his
	// place.
	replay := browser(t)
	replay.Jar.SetCookies(mustURL(t, site), alicesCookies)
	if r := do(t, replay, "POST", site+"/v1/rooms/shop/release", nil); !strings.Contains(r.body, `"released":false`) {
		t.Fatalf("the replayed release: %d %q", r.code, r.body)
	}
	if s := statusOf(t, do(t, bob, "GET", site+"/v1/rooms/shop/status", jsonPoll)); s.State != "admitted" {
		t.Fatalf("bob after the replay: %+v", s)
	}
	if s := stats(); s.Active != 1 || s.Waiting != 1 || s.Released != 1 {
		t.Fatalf("after the replay: %+v", s)
	}
}

// forgedPass is the pass among cookies with a character of its signature changed (not the last:
// its low bits may be padding the decoder ignores).
func forgedPass(t *testing.T, cookies []*http.Cookie) *http.Cookie {
	t.Helper()
	for _, ck := range cookies {
		if ck.Name == "sluice_pass_shop" {
			v := []byte(ck.Value)
			v[len(v)-5] ^= 1
			return &http.Cookie{Name: ck.Name, Value: string(v)}
		}
	}
	t.Fatalf("no pass among %v", cookies)
	return nil
}
