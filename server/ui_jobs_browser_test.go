package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// confirmAction clicks an action's button (selector), checks the confirmation page asks want,
// confirms, and waits for the banner note.
func confirmAction(t *testing.T, b *browsertest.Browser, button, want, note string) {
	t.Helper()
	b.Run(chromedp.Click(button))
	waitText(t, b, "#confirm-question", want)
	b.Run(chromedp.Click("#confirm-action"))
	waitText(t, b, ".note", note)
}

// TestDashboardInChromiumJobs drives the queue page's tabs and the job actions in a real headless
// Chromium: paging through ready jobs, respawning dead jobs in bulk, acking a stuck lease and
// taking another back, running a scheduled job now, changing a priority, finding jobs by id and by
// unique key, a binary payload's hex dump, a done job's result, a callback job's delivery attempts
// with its secret header redacted, and strings injected into jobs shown as text.
func TestDashboardInChromiumJobs(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := ctxT(t)
	ts.token(t, "shop") // makes the namespace, whose callback settings are set below
	pub := func(p queue.PublishParams) string {
		t.Helper()
		p.Namespace = "shop"
		res, err := ts.Queue.Publish(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	for i := range 23 {
		pub(queue.PublishParams{Queue: "bulk", Payload: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	var dead []string
	for i := range 3 {
		dead = append(dead, deadJob(t, ts, "shop", "bulk", fmt.Sprintf("dead %d", i)))
	}

	b, s := openDashboard(t, ts)

	// Paging: 23 ready jobs, 20 a page.
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/bulk")
	waitText(t, b, "#tab-ready .count", "23")
	if n := browsertest.Eval[float64](b, `document.querySelectorAll("#jobs-form tbody tr").length`); n != 20 {
		t.Fatalf("first page holds %v jobs, want 20", n)
	}
	b.Run(chromedp.Click("#next-page"))
	waitText(t, b, "#first-page", "First page")
	if n := browsertest.Eval[float64](b, `document.querySelectorAll("#jobs-form tbody tr").length`); n != 3 || b.Text("#next-page") != "" {
		t.Fatalf("second page holds %v jobs (next: %q), want the last 3", n, b.Text("#next-page"))
	}
	waitText(t, b, "#jobs-form tbody", `{"n":22}`)

	// Bulk respawn: select every dead job, confirm.
	b.Run(chromedp.Click("#tab-dead"))
	waitText(t, b, "#tab-dead .count", "3")
	b.Run(chromedp.Click("#select-all"))
	confirmAction(t, b, "#act-respawn", "3 jobs", "Respawned 3")
	waitText(t, b, "#tab-empty", "The dead letter is empty")
	for _, id := range dead {
		if j, err := ts.Queue.Get(ctx, "shop", "bulk", id); err != nil || j.State != queue.StateReady {
			t.Fatalf("respawned %s: %+v %v", id, j, err)
		}
	}

	// A stuck lease: its consumer holds it for an hour. The leased tab shows the delivery and the
	// lease end; ack it from there. Another one is taken back from its job page.
	stuck := pub(queue.PublishParams{Queue: "work", Payload: []byte(`"stuck"`), Priority: 9})
	other := pub(queue.PublishParams{Queue: "work", Payload: []byte(`"other"`)})
	ds, err := ts.Queue.Consume(ctx, queue.ConsumeParams{Namespace: "shop", Queues: []string{"work"}, Count: 2, TTR: time.Hour})
	if err != nil || len(ds) != 2 {
		t.Fatalf("consume: %v %v", ds, err)
	}
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/work?state=leased")
	waitText(t, b, `tr[data-job="`+stuck+`"]`, "(in ")
	if got := b.Text(`tr[data-job="` + stuck + `"] td.n`); got != "1" {
		t.Fatalf("delivery shown %q, want 1", got)
	}
	s.shot(t, "leased")
	b.Run(chromedp.Click(`input[name="lease"][value="` + stuck + `:1"]`))
	confirmAction(t, b, "#act-ack", "1 job", "Acked 1")
	if _, err := ts.Queue.Get(ctx, "shop", "work", stuck); err == nil {
		t.Fatal("the acked job is still there")
	}
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/work/jobs/" + other)
	waitText(t, b, "#job-state", "leased")
	confirmAction(t, b, "#act-release", "take back", "Took 1 jobs back")
	waitText(t, b, "#job-state", "ready")

	// A scheduled job runs now; a ready one gets a new priority and goes first.
	later := pub(queue.PublishParams{Queue: "work", Delay: time.Hour, Payload: []byte(`"later"`)})
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/work?state=scheduled")
	waitText(t, b, "#tab-scheduled .count", "1")
	b.Run(chromedp.Click(`input[name="id"][value="` + later + `"]`))
	confirmAction(t, b, "#act-run_now", "make ready now", "1 jobs are ready now")
	if j, err := ts.Queue.Get(ctx, "shop", "work", later); err != nil || j.State != queue.StateReady {
		t.Fatalf("run now: %+v %v", j, err)
	}
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/work")
	b.Run(chromedp.Click(`input[name="id"][value="`+later+`"]`), chromedp.SetValue("#new-priority", "200"))
	confirmAction(t, b, "#act-priority", "new priority 200", "Changed the priority of 1 jobs")
	if j, err := ts.Queue.Get(ctx, "shop", "work", later); err != nil || j.Priority != 200 || j.Position != 0 {
		t.Fatalf("new priority: %+v %v", j, err)
	}

	// A retrying job shows its last error and next try.
	retry := pub(queue.PublishParams{Queue: "flaky", Tries: 5, Payload: []byte(`"flaky"`)})
	d, err := ts.Queue.Consume(ctx, queue.ConsumeParams{Namespace: "shop", Queues: []string{"flaky"}})
	if err != nil || len(d) != 1 {
		t.Fatal(err)
	}
	hour := time.Hour
	if _, err := ts.Queue.Nack(ctx, queue.NackParams{Namespace: "shop", Queue: "flaky", ID: retry, Delivery: 1, Error: "upstream said 502", RetryAfter: &hour}); err != nil {
		t.Fatal(err)
	}
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/flaky?state=retrying")
	waitText(t, b, `tr[data-job="`+retry+`"]`, "upstream said 502")
	waitText(t, b, `tr[data-job="`+retry+`"]`, "(in ")

	// Look-up by unique key and by id; a binary payload as a hex dump.
	bin := pub(queue.PublishParams{Queue: "work", Payload: []byte{0x00, 0x01, 0x1b, 'A', 0xff, 0xfe}, UniqueKey: "invoice-7"})
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/work")
	b.Run(chromedp.SendKeys("#find-unique", "invoice-7"), chromedp.Click("#find-job"))
	waitText(t, b, "h1", bin)
	waitText(t, b, "#job-payload.hex", "00000000  00 01 1b 41 ff fe")
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/work")
	b.Run(chromedp.SendKeys("#find-id", later), chromedp.Click("#find-job"))
	waitText(t, b, "h1", later)

	// A done job keeps its result, not its payload.
	fin := pub(queue.PublishParams{Queue: "done", Payload: []byte(`"input"`)})
	d, err = ts.Queue.Consume(ctx, queue.ConsumeParams{Namespace: "shop", Queues: []string{"done"}})
	if err != nil || len(d) != 1 {
		t.Fatal(err)
	}
	if err := ts.Queue.Ack(ctx, queue.AckParams{Namespace: "shop", Queue: "done", ID: fin, Delivery: 1, Result: []byte(`{"sent":true}`)}); err != nil {
		t.Fatal(err)
	}
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/done?state=done")
	waitText(t, b, `tr[data-job="`+fin+`"]`, `{"sent":true}`)
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/done/jobs/" + fin)
	waitText(t, b, "#payload-dropped", "no longer kept")
	waitText(t, b, "#job-result", `"sent": true`)

	// A callback job: the first call gets 503, the second 200. Its page shows the call (the
	// Authorization header redacted) and both attempts.
	var calls atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if calls.Add(1) == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(recv.Close)
	wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/callbacks/destinations", map[string]any{"prefix": recv.URL + "/hooks"}), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/callbacks/allow_private", map[string]any{"allow_private": true}), http.StatusOK, "")
	hook := pub(queue.PublishParams{Queue: "hooks", Payload: []byte(`{"order":7}`), Tries: 3, Backoff: queue.Backoff{Base: 10 * time.Millisecond},
		Callback: &queue.Callback{URL: recv.URL + "/hooks/order", Method: http.MethodPut, Header: map[string]string{"Authorization": "Bearer s3cret-value", "X-Trace": "<b>trace-1</b>"}}})
	testwait.Until(t, 30*time.Second, "the callback delivered on its second try", func() bool {
		j, err := ts.Queue.Get(ctx, "shop", "hooks", hook)
		return err == nil && j.State == queue.StateDone
	})
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/hooks/jobs/" + hook)
	waitText(t, b, "#callback-url", recv.URL+"/hooks/order")
	waitText(t, b, "#job-callback", "PUT")
	waitText(t, b, "#callback-headers", "redacted")
	waitText(t, b, "#callback-headers", "<b>trace-1</b>")
	if strings.Contains(b.Text("main"), "s3cret") {
		t.Fatal("the job page shows the callback's Authorization header")
	}
	rows := browsertest.Eval[[]string](b, `Array.from(document.querySelectorAll("#callback-attempts tbody tr")).map(r => r.textContent)`)
	if len(rows) != 2 || !strings.Contains(rows[0], "200") || !strings.Contains(rows[0], "delivered") ||
		!strings.Contains(rows[1], "503") || !strings.Contains(rows[1], "retried") || !strings.Contains(rows[1], "warming up") {
		t.Fatalf("attempts shown: %q", rows)
	}
	s.shot(t, "callback")

	// Respawn all and delete all, each after the server's confirmation page.
	for i := range 2 {
		deadJob(t, ts, "shop", "graveyard", fmt.Sprintf("gone %d", i))
	}
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/graveyard?state=dead")
	confirmAction(t, b, "#respawn-all", "Respawn all 2 dead jobs of graveyard", "Respawned 2")
	deadJob(t, ts, "shop", "crypt", "gone for good")
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/crypt?state=dead")
	b.Run(chromedp.Click("#delete-all"))
	waitText(t, b, "#confirm-question", "Delete all 1 dead jobs of crypt")
	b.Run(chromedp.Click("#cancel-action")) // Cancel leaves it be
	waitText(t, b, "#tab-dead .count", "1")
	confirmAction(t, b, "#delete-all", "cannot be undone", "Deleted 1 dead jobs")
	if n, err := ts.Queue.DeadSize(ctx, "shop", "crypt"); err != nil || n != 0 {
		t.Fatalf("dead letter after delete all: %d %v", n, err)
	}

	// Strings a publisher controls are text on every page, never markup.
	evil := `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`
	bad := pub(queue.PublishParams{Queue: "evil", Payload: []byte(evil), UniqueKey: evil, Attributes: map[string]string{"k": evil}})
	for _, path := range []string{"/ui/ns/shop/queues/evil", "/ui/ns/shop/queues/evil/jobs/" + bad} {
		b.Navigate(ts.AdminURL + path)
		waitText(t, b, "main", `<img src=x onerror=`)
		if browsertest.Eval[bool](b, `window.pwned !== undefined || document.querySelector("main img, main script") !== null`) {
			t.Fatalf("%s: an injected string became markup", path)
		}
	}
}
