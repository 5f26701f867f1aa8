package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/waitroom"
)

// shooter keeps screenshots of the dashboard under the test's temp dir and, with
// SLUICE_UPDATE_SCREENSHOTS=1, also as the documentation's screenshots in docs/screenshots.
type shooter struct {
	b   *browsertest.Browser
	dir string
}

func (s shooter) shot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.b.Ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 makes a PNG (below, a JPEG)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name+".png"), png, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("SLUICE_UPDATE_SCREENSHOTS") == "1" {
		if err := os.WriteFile(filepath.Join("..", "docs", "screenshots", "dashboard-"+name+".png"), png, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// waitText waits until the element's text contains want.
func waitText(t *testing.T, b *browsertest.Browser, selector, want string) {
	t.Helper()
	b.WaitUntil(time.Minute, func() error {
		if got := b.Text(selector); !strings.Contains(got, want) {
			return fmt.Errorf("%s shows %q, want %q (page %s)", selector, got, want, b.Location())
		}
		return nil
	})
}

// openDashboard starts a Chromium at a desktop's width, logged in to ts's dashboard with the admin
// token.
func openDashboard(t *testing.T, ts *testServer) (*browsertest.Browser, shooter) {
	t.Helper()
	b := browsertest.New(t)
	b.Run(chromedp.EmulateViewport(1280, 800))
	b.Navigate(ts.AdminURL + "/ui/login")
	b.Run(chromedp.SendKeys("#token", ts.AdminToken), chromedp.Submit("#token"))
	waitText(t, b, "h1", "Queues")
	return b, shooter{b: b, dir: t.TempDir()}
}

// TestDashboardInChromium drives the dashboard in a real headless Chromium: log in with the admin
// token, see the counts of jobs published through the API refresh live, drill into a queue and a
// job, respawn a dead job with a click and a confirmation, create a token (its secret shown once) and revoke it,
// change a room's capacity, look at the request queue, and read the overview at a phone's width.
func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.UISampleInterval = 50 * time.Millisecond
		// No dispatcher: the task submitted below stays pending, so its page shows a waiting task.
		c.RelayWorkers = -1
	})
	ctx := ctxT(t)
	tok := ts.token(t, "shop")
	for i := range 3 {
		r := ts.public(t, "POST", "/v1/ns/shop/queues/mail/jobs", tok, fmt.Sprintf(`{"payload":{"to":"user%d@example.com"}}`, i))
		wantStatus(t, r, 201, "")
	}
	dead := deadJob(t, ts, "shop", "mail", `{"to":"bounced@example.com"}`)
	if _, err := ts.srv.waitroom.SetRoom(ctx, "sale", waitroom.RoomConfig{MaxActive: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.srv.relay.SetEndpoint(ctx, relay.Endpoint{Name: "billing", TargetURL: "http://127.0.0.1:1/charge", QPS: 5, Concurrency: 2}); err != nil {
		t.Fatal(err)
	}

	// An hour of samples as a busy queue would have left them, so the chart has a shape.
	now, err := ts.env.Client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var fields []any
	var pub, acked int64
	for i := range int64(61) {
		// Each sample also holds the oldest ready job's age (ms) and the processing times of
		// the acks since the one before: most near 10 ms (bucket 13), some near 40 (21), a few
		// near 300 (32).
		fields = append(fields, now.Unix()/60-60+i, fmt.Sprintf("%d:%d:0:%d:13.%d,21.%d,32.%d", pub, acked, 400+(i*i*37)%2600, 20+i%7, 4+(i*i)%9, i%3))
		pub += 30 + (i*i)%23 + i/2
		acked += 28 + (i*i)%19 + i/2
	}
	if err := ts.env.Client.HSet(ctx, ts.env.Prefix+":ui:throughput:{shop:mail}", fields...).Err(); err != nil {
		t.Fatal(err)
	}

	b := browsertest.New(t)
	s := shooter{b: b, dir: t.TempDir()}
	b.Run(chromedp.EmulateViewport(1280, 800))

	// Login: the token is asked for once.
	b.Navigate(ts.AdminURL + "/ui/")
	waitText(t, b, "h1", "Log in")
	s.shot(t, "login")
	b.Run(chromedp.SendKeys("#token", ts.AdminToken), chromedp.Submit("#token"))
	waitText(t, b, "h1", "Queues")

	// The overview shows the counts, and refreshes them live as jobs are published.
	waitText(t, b, `[data-live="shop/mail:ready"]`, "3")
	waitText(t, b, `[data-live="shop/mail:dead"]`, "1")
	wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/mail/jobs", tok, `{"payload":"one more"}`), 201, "")
	waitText(t, b, `[data-live="shop/mail:ready"]`, "4")
	if pts := browsertest.Eval[string](b, `document.querySelector('[data-points="shop/mail:ack:points"]').getAttribute("points")`); !strings.Contains(pts, "58,") || strings.Count(pts, ",19.0") > 5 {
		t.Fatalf("the throughput chart has no shape: %s", pts)
	}
	s.shot(t, "overview")

	// Into the queue, then the job.
	b.Run(chromedp.Click(`a[href="/ui/ns/shop/queues/mail"]`))
	waitText(t, b, "h1", "Queue mail")
	waitText(t, b, "#tab-ready .count", "4")
	s.shot(t, "queue")
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/mail/jobs/" + dead)
	waitText(t, b, "#job-state", "dead")
	waitText(t, b, "#job-error", "boom")
	waitText(t, b, "#job-payload", `"to": "bounced@example.com"`)
	s.shot(t, "job")

	// The dead letter: tick the job and respawn it, after the confirmation.
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/mail/dead")
	waitText(t, b, "#tab-dead .count", "1")
	s.shot(t, "dead")
	b.Run(chromedp.Click(`input[name="id"][value="`+dead+`"]`), chromedp.Click("#act-respawn"))
	waitText(t, b, "#confirm-question", "respawn")
	b.Run(chromedp.Click("#confirm-action"))
	waitText(t, b, ".note", "Respawned 1")
	waitText(t, b, "main", "The dead letter is empty")
	if j, err := ts.Queue.Get(ctx, "shop", "mail", dead); err != nil || j.State != queue.StateReady {
		t.Fatalf("respawned job: %+v %v", j, err)
	}

	// Tokens: create one, its secret shown once; then revoke it.
	b.Navigate(ts.AdminURL + "/ui/tokens")
	b.Run(chromedp.SetValue("#namespace", "billing"), chromedp.SendKeys("#description", "invoicer"),
		chromedp.SendKeys("#max_priority", "7"), chromedp.Click(`#create-token button[type="submit"]`))
	waitText(t, b, ".secret", "only once")
	secret := browsertest.Eval[string](b, `document.getElementById("token-secret").value`)
	created, err := ts.Tokens.Authenticate(ctx, secret)
	if err != nil || created.Namespace != "billing" || created.MaxPriority != 7 {
		t.Fatalf("token made in the browser: %+v %v", created, err)
	}
	s.shot(t, "tokens")
	b.Navigate(ts.AdminURL + "/ui/tokens")
	waitText(t, b, "main", created.ID)
	if strings.Contains(b.Text("main"), secret) || b.Text(".secret") != "" {
		t.Fatal("the secret is shown again")
	}
	confirmAction(t, b, `tr[data-token="`+created.ID+`"] button`, "Revoke token "+created.ID, "Revoked the token")
	if _, err := ts.Tokens.Authenticate(ctx, secret); err == nil {
		t.Fatal("the token revoked in the browser still works")
	}

	// A waiting room's capacity.
	b.Navigate(ts.AdminURL + "/ui/rooms")
	waitText(t, b, `[data-live="room/sale:max"]`, "2")
	b.Run(chromedp.SetValue(`tr[data-room="sale"] input[name="max_active"]`, "9"),
		chromedp.Click(`tr[data-room="sale"] .capacity button`))
	waitText(t, b, ".note", "now admits 9")
	waitText(t, b, `[data-live="room/sale:max"]`, "9")
	if cfg, err := ts.srv.waitroom.GetRoom(ctx, "sale"); err != nil || cfg.MaxActive != 9 {
		t.Fatalf("room after the browser's change: %+v %v", cfg, err)
	}
	s.shot(t, "rooms")

	// The request queue's endpoints.
	b.Navigate(ts.AdminURL + "/ui/endpoints")
	waitText(t, b, `tr[data-endpoint="billing"]`, "http://127.0.0.1:1/charge")
	s.shot(t, "endpoints")
	sub, err := ts.srv.relay.Submit(ctx, relay.SubmitParams{Endpoint: "billing", Namespace: "shop", TargetURL: "http://127.0.0.1:1/charge/42"})
	if err != nil {
		t.Fatal(err)
	}
	b.Run(chromedp.SendKeys(`input[name="id"]`, sub.ID), chromedp.Submit(`input[name="id"]`))
	waitText(t, b, "#task-status", "pending")
	waitText(t, b, "main", "http://127.0.0.1:1/charge/42")
	s.shot(t, "task")

	// At a phone's width the page itself does not scroll sideways (wide tables scroll inside
	// their own box), and the navigation stays reachable.
	b.Run(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	b.Navigate(ts.AdminURL + "/ui/")
	waitText(t, b, `[data-live="shop/mail:ready"]`, "5") // four published, one respawned
	if w := browsertest.Eval[bool](b, `document.documentElement.scrollWidth <= window.innerWidth`); !w {
		t.Fatalf("the overview scrolls sideways at 390px: %v wide; widest: %s", browsertest.Eval[float64](b, `document.documentElement.scrollWidth`),
			browsertest.Eval[string](b, `Array.from(document.querySelectorAll("main *")).filter(e => e.getBoundingClientRect().right > window.innerWidth && !e.closest(".scroll")).map(e => e.tagName + "." + e.className).slice(0, 5).join(" ")`))
	}
	s.shot(t, "phone")

	// Keyboard: the first Tab reaches the skip link, and every action is a native control.
	if n := browsertest.Eval[float64](b, `document.querySelectorAll("[tabindex='-1'], div[onclick], span[onclick]").length`); n != 0 {
		t.Fatalf("%v elements are out of the keyboard's reach", n)
	}
}
