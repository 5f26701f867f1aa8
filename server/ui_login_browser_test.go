package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
)

// submitLogin types token into the login form, submits it and waits for the answer's page.
func submitLogin(t *testing.T, b *browsertest.Browser, token string) {
	t.Helper()
	browsertest.Eval[bool](b, `(window.sluiceOldPage = true)`)
	b.Run(chromedp.SetValue("#token", token), chromedp.Submit("#token"))
	b.WaitUntil(time.Minute, func() error {
		if browsertest.Eval[bool](b, `window.sluiceOldPage === true || document.readyState !== "complete"`) {
			return fmt.Errorf("the login's answer has not loaded (page %s)", b.Location())
		}
		return nil
	})
}

// TestDashboardLoginInChromium drives the dashboard's login and sessions in a real Chromium, as
// an operator and as an attacker would: the eleventh wrong token in a minute gets the "too many
// failed" answer, and the right one works only after the wait; a banner shows only the server's
// texts; a session is good on both instances sharing the Redis, and once logged out, its saved
// cookie, replayed, gets the login page on both.
func TestDashboardLoginInChromium(t *testing.T) {
	t.Parallel()
	// Ten wrong logins in Chromium can take over a minute on a loaded machine: the count runs
	// over ten minutes here, so that the eleventh is still counted with the first; and the first
	// wait lasts 15s, not a second, so that the right token sent just after the eleventh still
	// falls within it.
	slow := func(c *Config) { c.authFailureWindow, c.authBackoff = 10*time.Minute, 15*time.Second }
	a := newTestServer(t, slow)
	other := newTestServerOn(t, a.env, slow)
	b := browsertest.New(t)
	b.Navigate(a.AdminURL + "/ui/")
	waitText(t, b, "h1", "Log in")

	for n := 1; n <= 10; n++ {
		submitLogin(t, b, fmt.Sprintf("guess-%d", n))
		waitText(t, b, "main", "That is not the admin token")
	}
	submitLogin(t, b, "guess-11")
	waitText(t, b, "#login-wait", "too many failed authentications")
	submitLogin(t, b, a.AdminToken) // during the wait the right token is not even checked
	waitText(t, b, "#login-wait", "too many failed authentications")
	b.WaitUntil(2*time.Minute, func() error {
		submitLogin(t, b, a.AdminToken)
		if got := b.Text("h1"); got != "Queues" {
			return fmt.Errorf("after the wait the right token shows %q", got)
		}
		return nil
	})

	// Banners: the server's texts by code, nothing else.
	b.Navigate(a.AdminURL + "/ui/?note=purged&n=3")
	waitText(t, b, ".note", "Purged 3 jobs.")
	for _, q := range []string{"note=Your+session+expired%2C+call+555-0100", "note=purged&n=%3Cb%3E3%3C%2Fb%3E"} {
		b.Navigate(a.AdminURL + "/ui/?" + q)
		waitText(t, b, "h1", "Queues")
		if got := b.Text(".note"); got != "" {
			t.Fatalf("?%s shows the banner %q", q, got)
		}
	}

	// One session serves both instances.
	var saved string
	for _, c := range b.Cookies(a.AdminURL + "/ui/") {
		if c.Name == "sluice_ui" {
			saved = c.Value
			if !c.HTTPOnly || c.Secure || c.SameSite != network.CookieSameSiteStrict {
				t.Fatalf("session cookie %+v", c)
			}
		}
	}
	if saved == "" {
		t.Fatal("no session cookie after logging in")
	}
	for _, ts := range []*testServer{a, other} {
		b.Navigate(ts.AdminURL + "/ui/")
		waitText(t, b, "h1", "Queues")
	}

	// Log out, then replay the saved cookie: the login page, on both instances.
	b.Run(chromedp.Click("#logout"))
	waitText(t, b, ".note", "Logged out.")
	waitText(t, b, "h1", "Log in")
	for _, ts := range []*testServer{a, other} {
		b.SetCookie(ts.AdminURL+"/ui/", &network.Cookie{Name: "sluice_ui", Value: saved, Path: "/ui/", HTTPOnly: true, SameSite: network.CookieSameSiteStrict})
		b.Navigate(ts.AdminURL + "/ui/")
		waitText(t, b, "h1", "Log in")
		if !strings.HasPrefix(b.Location(), ts.AdminURL+"/ui/login") {
			t.Fatalf("the replayed cookie is at %s", b.Location())
		}
	}
}
