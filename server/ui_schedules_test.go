package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/tenant"
)

func TestDashboardSchedules(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	d := newDashboard(t, ts)
	d.login(t)
	wantPage(t, d.get(t, "/ui/schedules"), http.StatusOK, "No schedules")
	ctx := ctxT(t)
	if _, err := ts.Queue.Schedules().Set(ctx, queue.ScheduleParams{Namespace: "shop", Name: "nightly",
		Cron: "0 2 * * *", Timezone: "Europe/Berlin", Job: queue.JobTemplate{Queue: "reports", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	wantPage(t, d.get(t, "/ui/schedules?ns=shop"), http.StatusOK, `data-schedule="nightly"`, "0 2 * * *", "Europe/Berlin",
		`href="/ui/ns/shop/queues/reports"`, "/ui/schedules/shop/nightly/pause")
	wantRedirect(t, d.post(t, "/ui/schedules/shop/nightly/pause", nil), "/ui/schedules?ns=shop&note=schedule_paused")
	wantPage(t, d.get(t, "/ui/schedules?ns=shop"), http.StatusOK, "(paused)", "/ui/schedules/shop/nightly/resume")
	wantPage(t, d.post(t, "/ui/schedules/shop/nightly/trigger", nil), http.StatusOK, "Publish the job of schedule nightly now?", `id="confirm-action"`)
	wantRedirect(t, d.post(t, "/ui/schedules/shop/nightly/trigger", url.Values{"confirm": {"yes"}}), "/ui/schedules?ns=shop&note=schedule_triggered")
	s, err := ts.Queue.Schedules().Get(ctx, "shop", "nightly")
	if err != nil || s.Fires != 1 || !s.Paused || s.LastJobID == "" {
		t.Fatalf("after pause and trigger: %+v, %v", s, err)
	}
	wantPage(t, d.get(t, "/ui/schedules?ns=shop"), http.StatusOK, "/ui/ns/shop/queues/reports/jobs/"+s.LastJobID)
	wantRedirect(t, d.post(t, "/ui/schedules/shop/nightly/resume", nil), "/ui/schedules?ns=shop&note=schedule_resumed")
	if s, err = ts.Queue.Schedules().Get(ctx, "shop", "nightly"); err != nil || s.Paused || !s.NextRun.After(time.Now()) {
		t.Fatalf("after resume: %+v, %v", s, err)
	}
	wantPage(t, d.post(t, "/ui/schedules/shop/nope/pause", nil), http.StatusNotFound)
	wantPage(t, d.post(t, "/ui/schedules/shop/nightly/explode", nil), http.StatusNotFound)
	wantPage(t, d.post(t, "/ui/schedules/shop/nightly/delete", nil), http.StatusOK, "Delete schedule nightly?")
	wantPage(t, d.post(t, "/ui/schedules/shop/nope/delete", nil), http.StatusNotFound)
	wantRedirect(t, d.post(t, "/ui/schedules/shop/nightly/delete", url.Values{"confirm": {"yes"}}), "/ui/schedules?ns=shop&note=schedule_deleted")
	wantPage(t, d.get(t, "/ui/schedules?ns=shop"), http.StatusOK, "No schedules in shop")
}

// A namespace session sees and acts on its own namespace's schedules only.
func TestDashboardSchedulesOfANamespaceSession(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := ctxT(t)
	for _, ns := range []string{"shop", "other"} {
		if _, err := ts.Queue.Schedules().Set(ctx, queue.ScheduleParams{Namespace: ns, Name: ns + "-nightly",
			Cron: "0 2 * * *", Job: queue.JobTemplate{Queue: "reports", Payload: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	d := newDashboard(t, ts)
	wantRedirect(t, d.send(t, http.MethodPost, "/ui/login", url.Values{"token": {ts.token(t, "shop", tenant.PermManage)}, "next": {"/ui/"}}, nil), "/ui/")
	r := d.get(t, "/ui/schedules")
	wantPage(t, r, http.StatusOK, `data-schedule="shop-nightly"`)
	if strings.Contains(string(r.Body), "other") {
		t.Fatalf("a namespace session sees another namespace's schedules:\n%s", r.Body)
	}
	wantPage(t, d.get(t, "/ui/schedules?ns=other"), http.StatusForbidden, "one namespace")
	for _, action := range []string{"pause", "resume", "trigger", "delete"} {
		wantPage(t, d.post(t, "/ui/schedules/other/other-nightly/"+action, url.Values{"confirm": {"yes"}}), http.StatusForbidden)
	}
	if s, err := ts.Queue.Schedules().Get(ctx, "other", "other-nightly"); err != nil || s.Paused || s.Fires != 0 {
		t.Fatalf("another namespace's schedule: %+v, %v; want it untouched", s, err)
	}
	wantRedirect(t, d.post(t, "/ui/schedules/shop/shop-nightly/pause", nil), "/ui/schedules?ns=shop&note=schedule_paused")
}
