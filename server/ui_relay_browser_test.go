package server

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/relay"
)

// TestDashboardInChromiumRequestQueue drives an endpoint's page in a real headless Chromium: from
// the endpoint list into its pending tasks (place, subject, priority), cancelling one after the
// server's confirmation page, and cancelling another from its task page.
func TestDashboardInChromiumRequestQueue(t *testing.T) {
	t.Parallel()
	ts, _ := relayDashboard(t)
	low := submitTask(t, ts, "slow", "alice", 0)
	high := submitTask(t, ts, "slow", "bob", 7)
	last := submitTask(t, ts, "slow", "carol", 0)
	b, s := openDashboard(t, ts)

	b.Navigate(ts.AdminURL + "/ui/endpoints")
	b.Run(chromedp.Click(`a[href="/ui/endpoints/slow"]`))
	waitText(t, b, "h1", "Endpoint slow")
	waitText(t, b, "#tab-pending .count", "3")
	waitText(t, b, "#endpoint-settings", "2 calls/s, 1 at once")
	waitText(t, b, `tr[data-task="`+high+`"]`, "bob")
	if place, row := b.Text(`tbody tr:first-child td.n`), b.Text(`tbody tr:first-child`); place != "0" || !strings.Contains(row, high) {
		t.Fatalf("the first row (place %q) is not the priority 7 task: %s", place, row)
	}
	s.shot(t, "endpoint")

	// Cancel alice's task: tick it, then the server's confirmation page.
	b.Run(chromedp.Click(`input[name="id"][value="` + low + `"]`))
	confirmAction(t, b, "#cancel-selected", "Cancel 1 task of slow", "Cancelled 1 tasks")
	waitText(t, b, "#tab-pending .count", "2")
	if task, err := ts.srv.relay.Peek(ctxT(t), low); err != nil || task.Status != relay.StatusCancelled {
		t.Fatalf("the task cancelled in the browser: %+v %v", task, err)
	}

	// Cancel carol's from its own page.
	b.Run(chromedp.Click(`tr[data-task="` + last + `"] a`))
	waitText(t, b, "#task-status", "pending")
	waitText(t, b, "main", "1 tasks") // one task ahead: bob's
	confirmAction(t, b, "#cancel-task", "Cancel 1 task", "Cancelled 1 tasks")
	waitText(t, b, "#task-status", "cancelled")
	if b.Text("#cancel-task") != "" {
		t.Fatal("an ended task still offers to cancel")
	}
}
