package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/relay"
)

// TestDashboardInChromiumRequestQueue drives an endpoint's page in a real headless Chromium: from
// the endpoint list into its pending tasks (place, subject, priority), paging through them,
// cancelling one after the server's confirmation page, and cancelling another from its task page.
func TestDashboardInChromiumRequestQueue(t *testing.T) {
	t.Parallel()
	ts, _ := relayDashboard(t)
	low := submitTask(t, ts, "slow", "alice", 0)
	high := submitTask(t, ts, "slow", "bob", 7)
	last := submitTask(t, ts, "slow", "carol", 0)
	for range 20 {
		submitTask(t, ts, "slow", "bulk", 0)
	}
	b, s := openDashboard(t, ts)

	b.Navigate(ts.AdminURL + "/ui/endpoints")
	b.Run(chromedp.Click(`a[href="/ui/endpoints/slow"]`))
	waitText(t, b, "h1", "Endpoint slow")
	waitText(t, b, "#tab-pending .count", "23")
	waitText(t, b, "#endpoint-settings", "2 calls/s, 1 at once")
	waitText(t, b, `tr[data-task="`+high+`"]`, "bob")
	if place, row := b.Text(`tbody tr:first-child td.n`), b.Text(`tbody tr:first-child`); place != "0" || !strings.Contains(row, high) {
		t.Fatalf("the first row (place %q) is not the priority 7 task: %s", place, row)
	}
	s.shot(t, "endpoint")

	// Paging: 23 pending tasks, 20 a page.
	rows := func() float64 {
		return browsertest.Eval[float64](b, `document.querySelectorAll("tr[data-task]").length`)
	}
	if n := rows(); n != 20 {
		t.Fatalf("the first page lists %v tasks, want 20", n)
	}
	b.Run(chromedp.Click("#next-page"))
	waitText(t, b, "#first-page", "First page")
	if n, place := rows(), b.Text(`tbody tr:first-child td.n`); n != 3 || place != "20" || b.Text("#next-page") != "" {
		t.Fatalf("the second page lists %v tasks from place %s, want the last 3 from 20", n, place)
	}
	b.Run(chromedp.Click("#first-page"))
	waitText(t, b, "tbody tr:first-child", high)

	// Cancel alice's task: tick it, then the server's confirmation page.
	b.Run(chromedp.Click(`input[name="id"][value="` + low + `"]`))
	confirmAction(t, b, "#cancel-selected", "Cancel 1 task of slow", "Cancelled 1 tasks")
	waitText(t, b, "#tab-pending .count", "22")
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

// TestEndpointTasksLiveInChromium: an endpoint's task list follows its tasks without a reload: a
// task submitted after the page opened appears in its place, one cancelled through the API goes;
// while a box is ticked the list stays as it is (the counts still move), and it catches up once
// the box is unticked.
func TestEndpointTasksLiveInChromium(t *testing.T) {
	t.Parallel()
	ts, _ := relayDashboard(t)
	alice := submitTask(t, ts, "slow", "alice", 0)
	b, _ := openDashboard(t, ts)
	b.Navigate(ts.AdminURL + "/ui/endpoints/slow")
	waitText(t, b, `tr[data-task="`+alice+`"]`, "alice")

	bob := submitTask(t, ts, "slow", "bob", 9)
	waitText(t, b, "tbody tr:first-child", bob)
	waitText(t, b, `tr[data-task="`+alice+`"] td.n`, "1")
	if _, err := ts.srv.relay.CancelTasks(ctxT(t), "slow", []string{alice}); err != nil {
		t.Fatal(err)
	}
	rows := func() float64 {
		return browsertest.Eval[float64](b, `document.querySelectorAll("tr[data-task]").length`)
	}
	b.WaitUntil(time.Minute, func() error {
		if n := rows(); n != 1 {
			return fmt.Errorf("%v rows, want bob's alone", n)
		}
		return nil
	})

	b.Run(chromedp.Click(`input[name="id"][value="` + bob + `"]`))
	carol := submitTask(t, ts, "slow", "carol", 0)
	waitText(t, b, "#tab-pending .count", "2")
	if n := rows(); n != 1 || !browsertest.Eval[bool](b, `document.querySelector('input[value="`+bob+`"]').checked`) {
		t.Fatalf("the list changed under a ticked box: %v rows", n)
	}
	b.Run(chromedp.Click(`input[name="id"][value="` + bob + `"]`))
	waitText(t, b, `tr[data-task="`+carol+`"]`, "carol")
}
