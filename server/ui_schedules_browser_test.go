package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/queue"
)

// TestDashboardInChromiumSchedules drives the schedules page in a real headless Chromium: the
// page reached from the navigation lists the namespace's schedules with their rule, zone and next
// run; once the server's scheduler fires one, its last job is a link to that job; pause, trigger
// (after its confirmation page), resume and delete act on the schedule and say so.
func TestDashboardInChromiumSchedules(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := ctxT(t)
	ts.token(t, "shop")
	for _, p := range []queue.ScheduleParams{
		{Name: "beat", Every: time.Second, Job: queue.JobTemplate{Queue: "beats", Payload: []byte(`{"beat":1}`)}},
		{Name: "nightly", Cron: "0 2 * * *", Timezone: "Europe/Berlin", Job: queue.JobTemplate{Queue: "reports", Payload: []byte(`{}`)}},
	} {
		p.Namespace = "shop"
		if _, err := ts.Queue.Schedules().Set(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := openDashboard(t, ts)
	b.Run(chromedp.Click(`nav a[href="/ui/schedules"]`))
	waitText(t, b, "h1", "Schedules")
	waitText(t, b, `tr[data-schedule="nightly"]`, "0 2 * * *")
	waitText(t, b, `tr[data-schedule="nightly"]`, "Europe/Berlin")
	waitText(t, b, `tr[data-schedule="beat"]`, "every 1s")

	// The scheduler fires beat: after a reload the row links its last job.
	lastJob := `tr[data-schedule="beat"] a[href*="/queues/beats/jobs/"]`
	b.WaitUntil(time.Minute, func() error {
		b.Navigate(ts.AdminURL + "/ui/schedules?ns=shop")
		if !browsertest.Eval[bool](b, `document.querySelector('`+lastJob+`') !== null`) {
			return errors.New("no last job yet")
		}
		return nil
	})
	b.Run(chromedp.Click(lastJob))
	waitText(t, b, "main", `"schedule":"beat"`)
	if loc := b.Location(); !strings.Contains(loc, "/ui/ns/shop/queues/beats/jobs/") {
		t.Fatalf("the last job's link led to %s", loc)
	}

	b.Navigate(ts.AdminURL + "/ui/schedules?ns=shop")
	b.Run(chromedp.Click(`tr[data-schedule="beat"] form[action$="/pause"] button`))
	waitText(t, b, ".note", "Paused the schedule")
	waitText(t, b, `tr[data-schedule="beat"]`, "(paused)")
	fires := mustSchedule(t, ts, "beat").Fires
	confirmAction(t, b, `tr[data-schedule="beat"] form[action$="/trigger"] button`,
		"Publish the job of schedule beat now?", "Published the schedule's job now")
	if s := mustSchedule(t, ts, "beat"); !s.Paused || s.Fires != fires+1 {
		t.Fatalf("after pause and trigger: paused %v, fires %d (was %d)", s.Paused, s.Fires, fires)
	}
	b.Run(chromedp.Click(`tr[data-schedule="beat"] form[action$="/resume"] button`))
	waitText(t, b, ".note", "Resumed the schedule")
	confirmAction(t, b, `tr[data-schedule="nightly"] form[action$="/delete"] button`,
		"Delete schedule nightly?", "Deleted the schedule")
	if n := browsertest.Eval[float64](b, `document.querySelectorAll('tr[data-schedule="nightly"]').length`); n != 0 {
		t.Fatalf("the deleted schedule is still listed")
	}
	if s := mustSchedule(t, ts, "beat"); s.Paused {
		t.Fatalf("beat still paused after resume")
	}
}

func mustSchedule(t *testing.T, ts *testServer, name string) queue.Schedule {
	t.Helper()
	s, err := ts.Queue.Schedules().Get(ctxT(t), "shop", name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
