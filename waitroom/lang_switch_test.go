package waitroom_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// TestLanguageSwitchWithoutJavaScript: in Chromium with scripts off, the visitor follows the
// page's language links: each shows the page in that language at the URL it asked for (its own
// query kept), at the same place in line, and the pick stays in an HttpOnly cookie.
func TestLanguageSwitchWithoutJavaScript(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{PollInterval: time.Second, PollsPerMinute: 100_000})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, Language: "en"})
	_, site := middlewareSite(t, room)
	arrive(t, room, "holder")

	b := browsertest.New(t)
	b.DisableScripts()
	b.Navigate(site.URL + "/tickets?id=7")
	b.WaitUntil(time.Minute, func() error { return placeShown(b, 1) })
	for _, lang := range []string{"de", "ja", "fr", "zh", "es", "en"} {
		want := waitroom.PageText(lang)
		browsertest.Eval[bool](b, `(function(){document.querySelector('#languages a[data-lang="`+lang+`"]').click();return true})()`)
		b.WaitUntil(time.Minute, func() error {
			if got := browsertest.Eval[string](b, `(document.documentElement || {}).lang || ""`); got != lang {
				return fmt.Errorf("page language %q, want %q (at %s)", got, lang, b.Location())
			}
			if got := b.Text("#heading"); got != want.Heading {
				return fmt.Errorf("%s: heading %q, want %q", lang, got, want.Heading)
			}
			if got := b.Location(); got != site.URL+"/tickets?id=7" {
				return fmt.Errorf("%s: the page is at %s", lang, got)
			}
			return placeShown(b, 1)
		})
		if n := waitingCount(t, room); n != 1 {
			t.Fatalf("%s: %d in line, want the browser alone", lang, n)
		}
	}
	var picked *string
	for _, ck := range b.Cookies(site.URL) {
		if ck.Name == "sluice_lang" {
			if !ck.HTTPOnly {
				t.Errorf("the language cookie is not HttpOnly")
			}
			picked = &ck.Value
		}
	}
	if picked == nil || *picked != "en" {
		t.Fatalf("the language cookie: %v", picked)
	}
}

// TestLanguageSwitchBehindNginx reads the HTML nginx serves: the links lead to the URL asked for
// with ?sluice_lang=, which answers 303 back to it with the pick in a cookie; the place is kept.
// An unknown language is dropped without a cookie, and no link or redirect leaves the site.
func TestLanguageSwitchBehindNginx(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	site := nginxSite(t, c, waitroom.RoomConfig{MaxActive: 1})
	room, _ := c.Room("shop")
	do(t, browser(t), "GET", site+"/", nil) // holds the place

	bob := browser(t)
	r := do(t, bob, "GET", site+"/cart?x=1", map[string]string{"Accept-Language": "fr"})
	if !strings.Contains(r.body, `lang="fr"`) || !strings.Contains(r.body, `id="position">1<`) {
		t.Fatalf("bob's page: %d %q", r.code, r.body)
	}
	if !strings.Contains(r.body, `href="/cart?x=1&amp;sluice_lang=de"`) || strings.Contains(r.body, `href="#"`) {
		t.Fatalf("the switch's links: %q", r.body)
	}
	r = doOnce(t, bob, "GET", site+"/cart?x=1&sluice_lang=de", map[string]string{"Accept-Language": "fr"})
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/cart?x=1" || !strings.Contains(r.header.Get("Set-Cookie"), "sluice_lang=de;") {
		t.Fatalf("following the link to German: %d %v", r.code, r.header)
	}
	r = do(t, bob, "GET", site+"/cart?x=1", map[string]string{"Accept-Language": "fr"})
	if !strings.Contains(r.body, `lang="de"`) || !strings.Contains(r.body, waitroom.PageText("de").Heading) || !strings.Contains(r.body, `id="position">1<`) {
		t.Fatalf("bob's page after the switch: %d %q", r.code, r.body)
	}
	if n := waitingCount(t, room); n != 1 {
		t.Fatalf("%d in line, want bob alone", n)
	}
	// The waiting page by its own URL switches too.
	r = doOnce(t, bob, "GET", site+"/v1/rooms/shop/wait?next=%2Fcart&sluice_lang=ja", nil)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/v1/rooms/shop/wait?next=%2Fcart" {
		t.Fatalf("the wait route's switch: %d %v", r.code, r.header)
	}
	// An unknown language: back to the page, the pick as it was.
	r = doOnce(t, bob, "GET", site+"/cart?sluice_lang=xx&x=1", nil)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/cart?x=1" || strings.Contains(r.header.Get("Set-Cookie"), "sluice_lang") {
		t.Fatalf("an unknown language: %d %v", r.code, r.header)
	}
	if r := do(t, bob, "GET", site+"/cart", nil); !strings.Contains(r.body, `lang="ja"`) {
		t.Fatalf("the pick after an unknown language: %q", r.body)
	}
}

// TestLanguageSwitchStaysOnSite: a page shown at a URL that would lead off the site links to and
// redirects to no other site.
func TestLanguageSwitchStaysOnSite(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	mux := http.NewServeMux()
	c.Handler(waitroom.HandlerConfig{}).Register(mux)
	site := waitroom.Middleware(room, newUpstream(t).Config.Handler)
	arrive(t, room, "holder")
	for _, req := range []struct {
		h      http.Handler
		target string
		header http.Header
	}{
		{site, "//evil.example/x?sluice_lang=de", nil},
		{site, "/\\evil.example/x?sluice_lang=de", nil},
		{mux, "/v1/rooms/r/wait", http.Header{waitroom.NextHeader: {"//evil.example/x?sluice_lang=de"}}},
		{mux, "/v1/rooms/r/wait", http.Header{waitroom.NextHeader: {"https://evil.example/x?sluice_lang=de"}}},
	} {
		rec := serveOnce(req.h, "GET", req.target, req.header)
		loc, body := rec.Header().Get("Location"), rec.Body.String()
		if u, err := url.Parse(loc); err != nil || u.Host != "" || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, `/\`) ||
			strings.Contains(body, "//evil.example") || strings.Contains(body, `\\evil.example`) {
			t.Errorf("%s %v: %d %v %q", req.target, req.header, rec.Code, rec.Header(), body)
		}
	}
}
