package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/relay"
)

// relayDashboard is a server without dispatcher (submitted tasks stay pending) with endpoints
// "slow" and "other", and a logged-in dashboard.
func relayDashboard(t *testing.T) (*testServer, *dashboard) {
	t.Helper()
	ts := newTestServer(t, noDispatch)
	for _, name := range []string{"slow", "other"} {
		if _, err := ts.srv.relay.SetEndpoint(ctxT(t), relay.Endpoint{Name: name, TargetURL: "http://127.0.0.1:1/" + name, QPS: 2, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
	}
	d := newDashboard(t, ts)
	d.login(t)
	return ts, d
}

// submitTask submits a task for subject to an endpoint of a relayDashboard server.
func submitTask(t *testing.T, ts *testServer, endpoint, subject string, priority int) string {
	t.Helper()
	res, err := ts.srv.relay.Submit(ctxT(t), relay.SubmitParams{Endpoint: endpoint, Namespace: "shop", Subject: subject, Priority: priority, PriorityCap: relay.MaxPriority})
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// An endpoint's page lists its pending tasks in start order, 20 a page, with place, subject and
// priority; bad list names and offsets are a 400 naming the field.
func TestDashboardEndpointTasks(t *testing.T) {
	t.Parallel()
	ts, d := relayDashboard(t)
	var ids []string
	for i := range 25 {
		ids = append(ids, submitTask(t, ts, "slow", fmt.Sprintf("user-%02d", i), 0))
	}
	first := submitTask(t, ts, "slow", "vip", 9)

	r := d.get(t, "/ui/endpoints/slow")
	wantPage(t, r, http.StatusOK, `data-live="ep/slow:queued">26<`, "http://127.0.0.1:1/slow", `id="next-page"`, "vip")
	if n := strings.Count(string(r.Body), `<tr data-task=`); n != 20 {
		t.Fatalf("first page lists %d tasks, want 20", n)
	}
	if i := strings.Index(string(r.Body), first); i < 0 || i > strings.Index(string(r.Body), ids[0]) {
		t.Fatal("the priority 9 task is not listed first")
	}
	r = d.get(t, "/ui/endpoints/slow?list=pending&offset=20")
	wantPage(t, r, http.StatusOK, ids[24], "user-24", `id="first-page"`)
	if n := strings.Count(string(r.Body), `<tr data-task=`); n != 6 || strings.Contains(string(r.Body), `id="next-page"`) {
		t.Fatalf("second page lists %d tasks, want the last 6 and no next page", n)
	}
	wantPage(t, d.get(t, "/ui/endpoints/slow?list=running"), http.StatusOK, "Nothing running")
	wantPage(t, d.get(t, "/ui/endpoints/slow?list=done"), http.StatusBadRequest, "list")
	wantPage(t, d.get(t, "/ui/endpoints/slow?offset=-3"), http.StatusBadRequest, "offset")
	wantPage(t, d.get(t, "/ui/endpoints/nope"), http.StatusNotFound)
	var l map[string]string
	d.get(t, "/ui/api/endpoints/slow").JSON(t, &l)
	if l["ep/slow:queued"] != "26" {
		t.Fatalf("endpoint JSON: %v", l)
	}
}

// Cancelling tasks asks first and changes nothing until confirmed; a form naming another
// endpoint's task through this endpoint's path, too many ids, or no CSRF token cancels nothing.
func TestDashboardCancelTasksRefuses(t *testing.T) {
	t.Parallel()
	ts, d := relayDashboard(t)
	mine, theirs := submitTask(t, ts, "slow", "a", 0), submitTask(t, ts, "other", "b", 0)
	status := func(id string) relay.Status {
		t.Helper()
		task, err := ts.srv.relay.Peek(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return task.Status
	}
	action := "/ui/endpoints/slow/tasks/cancel"
	wantPage(t, d.post(t, action, url.Values{"id": {mine}, "from": {"pending"}}), http.StatusOK, `id="confirm-action"`, mine, "Cancel 1 task of slow")
	wantPage(t, d.post(t, action, url.Values{"id": {theirs}, "confirm": {"yes"}}), http.StatusNotFound)
	wantPage(t, d.post(t, action, url.Values{"id": {mine, theirs}, "confirm": {"yes"}}), http.StatusNotFound)
	wantPage(t, d.post(t, action, nil), http.StatusBadRequest, "select at least one")
	wantPage(t, d.post(t, "/ui/endpoints/nope/tasks/cancel", url.Values{"id": {mine}, "confirm": {"yes"}}), http.StatusNotFound)
	many := url.Values{"confirm": {"yes"}}
	for range relay.MaxListTasks + 1 {
		many.Add("id", mine)
	}
	wantPage(t, d.post(t, action, many), http.StatusBadRequest, "at most")
	wantPage(t, d.send(t, http.MethodPost, action, url.Values{"id": {mine}, "confirm": {"yes"}}, nil), http.StatusForbidden)
	if status(mine) != relay.StatusPending || status(theirs) != relay.StatusPending {
		t.Fatal("a refused or unconfirmed cancel changed a task")
	}
	wantRedirect(t, d.post(t, action, url.Values{"id": {mine}, "from": {"pending"}, "confirm": {"yes"}}), "/ui/endpoints/slow?list=pending&n=1&note=tasks_cancelled")
	// From the task's page, back to it; a task that had ended counts for none.
	wantRedirect(t, d.post(t, action, url.Values{"id": {mine}, "from": {"task"}, "confirm": {"yes"}}), "/ui/tasks?id="+url.QueryEscape(mine)+"&n=0")
	if status(mine) != relay.StatusCancelled || status(theirs) != relay.StatusPending {
		t.Fatalf("after cancel: %s, the other endpoint's %s", status(mine), status(theirs))
	}
}
