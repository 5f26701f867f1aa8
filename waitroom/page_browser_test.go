package waitroom_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// TestWaitingPageInChromium: a visitor in a real headless Chromium waits on the page, sees its
// position fall as the visitors ahead get in, and lands on the upstream page when a slot frees,
// all by the page's own polling.
func TestWaitingPageInChromium(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	// A waiting visitor counts as live for two poll intervals after its poll: 1 s leaves the scripted
	// visitors below live between their poll and the release before them, even on a loaded machine.
	c := newClient(t, env, waitroom.Config{PollInterval: time.Second, PollsPerMinute: 100_000})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	_, site := middlewareSite(t, room)

	// One visitor holds the slot; two wait ahead of the browser.
	ahead := []string{"holder", "first", "second"}
	clients := map[string]*httpClient{}
	for _, name := range ahead {
		clients[name] = browser(t)
		do(t, clients[name], "GET", site.URL+"/", jsonPoll)
	}

	b := browsertest.New(t)
	b.Navigate(site.URL + "/tickets")
	position := func(want string) {
		t.Helper()
		b.WaitUntil(time.Minute, func() error {
			if got := b.Text("#position"); got != want {
				return fmt.Errorf("position shows %q, want %q (page %s)", got, want, b.Location())
			}
			return nil
		})
	}
	position("3")
	if got := b.Text("#length"); got != "3" {
		t.Fatalf("line length shows %q", got)
	}
	// Each visitor ahead gets in when the one before leaves, and leaves in turn.
	for i, name := range ahead {
		if i+1 < len(ahead) {
			do(t, clients[ahead[i+1]], "GET", site.URL+"/", jsonPoll) // the next one is live: it just polled
		}
		do(t, clients[name], "GET", site.URL+"/done?release=1", nil)
		if i+1 < len(ahead) {
			next := ahead[i+1]
			if s := statusOf(t, do(t, clients[next], "GET", site.URL+"/", jsonPoll)); s.State != "admitted" {
				t.Fatalf("%s after %s left: %+v", next, name, s)
			}
			position(fmt.Sprint(2 - i))
		}
	}
	// The slot is free and the browser is at the head: its next poll lets it in and the page moves
	// on to the upstream page it asked for.
	waitUpstreamPage(t, b, "/tickets", "")
}

// TestWaitingPageWithoutJavaScript: with scripts off, the page's meta refresh alone takes the
// visitor in once a slot frees.
func TestWaitingPageWithoutJavaScript(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{PollInterval: time.Second, PollsPerMinute: 100_000})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	_, site := middlewareSite(t, room)
	holder := browser(t)
	do(t, holder, "GET", site.URL+"/", nil)

	b := browsertest.New(t)
	b.DisableScripts()
	b.Navigate(site.URL + "/plain")
	// The first answer hands the browser its visitor cookie; the refresh a second later joins the
	// line.
	b.WaitUntil(time.Minute, func() error {
		if got := b.Text("#position"); got != "1" {
			return fmt.Errorf("position shows %q", got)
		}
		return nil
	})
	do(t, holder, "GET", site.URL+"/bye?release=1", nil)
	waitUpstreamPage(t, b, "/plain", "")
}

// TestCountdownPageInChromium: before open_at the page counts down; at the start the draw puts
// the visitor in line and, the room being empty, its next poll takes it to the upstream page.
func TestCountdownPageInChromium(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	// A waiting visitor counts as live for two poll intervals after its poll: 1 s leaves the scripted
	// visitors below live between their poll and the release before them, even on a loaded machine.
	c := newClient(t, env, waitroom.Config{PollInterval: time.Second, PollsPerMinute: 100_000})
	b := browsertest.New(t) // started first: the countdown starts once the browser is up
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, OpenAt: time.Now().Add(5 * time.Second)})
	_, site := middlewareSite(t, room)

	b.Navigate(site.URL + "/launch")
	// The first answer hands out the visitor cookie; the page's first poll, at once, joins the draw.
	b.WaitUntil(time.Minute, func() error {
		if browsertest.Eval[bool](b, `document.getElementById("countdown-box").hidden`) {
			return errors.New("the countdown is hidden before the opening")
		}
		return nil
	})
	if got := b.Text("#countdown"); !strings.HasPrefix(got, "0:0") {
		t.Fatalf("countdown shows %q", got)
	}
	waitUpstreamPage(t, b, "/launch", "#countdown")
}

// waitUpstreamPage waits until the browser shows the upstream's page for path: the waiting page
// has let the visitor in. A failure names what the page shows, and also, when it is not "", the
// text of the element also selected (the countdown, say).
func waitUpstreamPage(t *testing.T, b *browsertest.Browser, path, also string) {
	t.Helper()
	b.WaitUntil(time.Minute, func() error {
		if got := b.Text("#upstream"); !strings.Contains(got, "the upstream page "+path) {
			if also != "" {
				return fmt.Errorf("page %s shows %q (%s %q)", b.Location(), got, also, b.Text(also))
			}
			return fmt.Errorf("page %s shows %q", b.Location(), got)
		}
		return nil
	})
}
