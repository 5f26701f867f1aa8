package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/tenant"
)

// The job actions refuse what an attacker could send: no CSRF token, a foreign Origin, an id of
// another namespace's job, a lease action without a lease, and they change nothing before the
// confirmation.
func TestDashboardJobActionsRefuse(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := ctxT(t)
	pub := func(ns, q string) string {
		res, err := ts.Queue.Publish(ctx, queue.PublishParams{Namespace: ns, Queue: q, Payload: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	mine, theirs := pub("shop", "work"), pub("other", "work")
	d := newDashboard(t, ts)
	d.login(t)
	const action = "/ui/ns/shop/queues/work/jobs/action"
	exists := func(ns, id string) bool {
		_, err := ts.Queue.Get(ctx, ns, "work", id)
		return err == nil
	}

	// Without the CSRF token, or from another site, nothing happens.
	form := url.Values{"action": {"delete"}, "id": {mine}, "confirm": {"yes"}}
	wantPage(t, d.send(t, http.MethodPost, action, form, nil), http.StatusForbidden, "CSRF")
	form.Set("csrf", d.csrf)
	wantPage(t, d.send(t, http.MethodPost, action, form, map[string]string{"Origin": "https://evil.example"}), http.StatusForbidden)
	if !exists("shop", mine) {
		t.Fatal("a refused delete deleted")
	}

	// Without the confirmation: the confirmation page, and nothing changed.
	wantPage(t, d.post(t, action, url.Values{"action": {"delete"}, "id": {mine}}), http.StatusOK, `id="confirm-action"`, mine)
	if !exists("shop", mine) {
		t.Fatal("a delete ran before its confirmation")
	}

	// Ids are looked up in the queue of the path only: another namespace's job is not reached.
	wantRedirect(t, d.post(t, action, url.Values{"action": {"delete"}, "id": {theirs}, "confirm": {"yes"}}), "/ui/ns/shop/queues/work?n=0&note=jobs_deleted")
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/work/jobs/action", url.Values{"action": {"priority"}, "priority": {"9"}, "id": {theirs}, "confirm": {"yes"}}), "/ui/ns/shop/queues/work?n=0")
	if j, err := ts.Queue.Get(ctx, "other", "work", theirs); err != nil || j.Priority != 0 {
		t.Fatalf("another namespace's job was changed: %+v %v", j, err)
	}

	// Bad forms are 400 with the field, and change nothing.
	wantPage(t, d.post(t, action, url.Values{"action": {"explode"}, "id": {mine}}), http.StatusBadRequest, "action")
	wantPage(t, d.post(t, action, url.Values{"action": {"ack"}, "id": {mine}, "confirm": {"yes"}}), http.StatusBadRequest, "lease")
	wantPage(t, d.post(t, action, url.Values{"action": {"ack"}, "lease": {mine + ":x"}}), http.StatusBadRequest, "lease")
	wantPage(t, d.post(t, action, url.Values{"action": {"priority"}, "priority": {"256"}, "id": {mine}}), http.StatusBadRequest, "priority")
	wantPage(t, d.post(t, action, url.Values{"action": {"delete"}}), http.StatusBadRequest, "select at least one")
	wantPage(t, d.post(t, "/ui/ns/shop/queues/nope/jobs/action", url.Values{"action": {"delete"}, "id": {mine}}), http.StatusNotFound)

	// An ack names the delivery the page showed: a lease taken since is not acked.
	ds, err := ts.Queue.Consume(ctx, queue.ConsumeParams{Namespace: "shop", Queues: []string{"work"}, TTR: time.Hour})
	if err != nil || len(ds) != 1 {
		t.Fatal(err)
	}
	wantRedirect(t, d.post(t, action, url.Values{"action": {"ack"}, "lease": {mine + ":7"}, "confirm": {"yes"}}), "/ui/ns/shop/queues/work?n=0&note=acked")
	wantRedirect(t, d.post(t, action, url.Values{"action": {"ack"}, "lease": {mine + ":1"}, "confirm": {"yes"}, "from": {"leased"}}), "/ui/ns/shop/queues/work?state=leased&n=1&note=acked")
	if exists("shop", mine) {
		t.Fatal("the acked job is still there")
	}

	// Look-up: an unknown unique key is not found; the from field cannot send the browser away.
	wantPage(t, d.get(t, "/ui/find?ns=shop&q=work&unique=nobody"), http.StatusNotFound)
	wantRedirect(t, d.post(t, action, url.Values{"action": {"delete"}, "id": {theirs}, "confirm": {"yes"}, "from": {"//evil.example/"}}), "/ui/ns/shop/queues/work?n=0")
}

// The native API lists a queue's jobs by state, for a token of the queue's namespace only.
func TestListJobsAPI(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok, otherTok := ts.token(t, "shop"), ts.token(t, "other")
	for range 3 {
		wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/mail/jobs", tok, `{"payload":{"n":1}}`), http.StatusCreated, "")
	}
	wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/mail/jobs", tok, `{"payload":"later","delay":3600}`), http.StatusCreated, "")
	var page struct {
		Jobs       []jobs.JobJSON `json:"jobs"`
		NextCursor string         `json:"next_cursor"`
		Total      int64          `json:"total"`
	}
	r := ts.public(t, "GET", "/v1/ns/shop/queues/mail/jobs?state=ready&limit=2", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &page)
	if len(page.Jobs) != 2 || page.Total != 3 || page.NextCursor != "2" || page.Jobs[0].State != "ready" {
		t.Fatalf("first page: %s", r.Body)
	}
	r = ts.public(t, "GET", "/v1/ns/shop/queues/mail/jobs?state=scheduled", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &page)
	if len(page.Jobs) != 1 || page.Jobs[0].State != "delayed" || page.NextCursor != "" {
		t.Fatalf("scheduled: %s", r.Body)
	}
	wantStatus(t, ts.public(t, "GET", "/v1/ns/shop/queues/mail/jobs?state=lost", tok, nil), http.StatusBadRequest, "invalid_argument")
	wantStatus(t, ts.public(t, "GET", "/v1/ns/shop/queues/mail/jobs?state=ready&limit=101", tok, nil), http.StatusBadRequest, "invalid_argument")
	wantStatus(t, ts.public(t, "GET", "/v1/ns/shop/queues/mail/jobs?state=ready", otherTok, nil), http.StatusForbidden, "")
}

// A session opened with a namespace token (manage permission) sees and acts on its namespace's
// jobs only: another namespace's pages, jobs and actions, and the server-wide pages, are refused,
// whatever the path or form names; revoking the token ends the session.
func TestDashboardNamespaceSession(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := ctxT(t)
	pub := func(ns string) string {
		res, err := ts.Queue.Publish(ctx, queue.PublishParams{Namespace: ns, Queue: "work", Payload: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	mine, theirs := pub("shop"), pub("other")
	publishOnly := ts.token(t, "shop", tenant.PermPublish)
	manage := ts.token(t, "shop", tenant.PermManage)
	d := newDashboard(t, ts)
	wantPage(t, d.send(t, http.MethodPost, "/ui/login", url.Values{"token": {publishOnly}, "next": {"/ui/"}}, nil), http.StatusUnauthorized, "manage permission")
	wantRedirect(t, d.send(t, http.MethodPost, "/ui/login", url.Values{"token": {manage}, "next": {"/ui/"}}, nil), "/ui/")

	r := d.get(t, "/ui/")
	wantPage(t, r, http.StatusOK, `href="/ui/ns/shop/queues/work"`, `id="session-scope"`)
	if strings.Contains(string(r.Body), "other") || strings.Contains(string(r.Body), `href="/ui/tokens"`) {
		t.Fatalf("a namespace session sees more than its namespace:\n%s", r.Body)
	}
	for _, path := range []string{
		"/ui/ns/other/queues/work", "/ui/ns/other/queues/work/jobs/" + theirs, "/ui/api/ns/other/queues/work",
		"/ui/find?ns=other&q=work&id=" + theirs, "/ui/tokens", "/ui/endpoints", "/ui/rooms", "/ui/tasks",
		"/ui/endpoints/any", "/ui/api/endpoints/any",
	} {
		wantPage(t, d.get(t, path), http.StatusForbidden, "one namespace")
	}
	wantPage(t, d.post(t, "/ui/ns/other/queues/work/jobs/action", url.Values{"action": {"delete"}, "id": {theirs}, "confirm": {"yes"}}), http.StatusForbidden)
	wantPage(t, d.post(t, "/ui/ns/other/queues/work/purge", url.Values{"confirm": {"work"}}), http.StatusForbidden)
	wantPage(t, d.post(t, "/ui/logout-everywhere", nil), http.StatusForbidden)
	wantPage(t, d.post(t, "/ui/endpoints/any/tasks/cancel", url.Values{"id": {"any.x"}, "confirm": {"yes"}}), http.StatusForbidden)
	// Its own queue's id of the other namespace's job reaches nothing either.
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/work/jobs/action", url.Values{"action": {"delete"}, "id": {theirs}, "confirm": {"yes"}}), "/ui/ns/shop/queues/work?n=0")
	if _, err := ts.Queue.Get(ctx, "other", "work", theirs); err != nil {
		t.Fatalf("another namespace's job: %v", err)
	}
	// Its own namespace: pages and actions work.
	wantPage(t, d.get(t, "/ui/ns/shop/queues/work/jobs/"+mine), http.StatusOK, mine)
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/work/jobs/action", url.Values{"action": {"delete"}, "id": {mine}, "confirm": {"yes"}}), "/ui/ns/shop/queues/work?n=1")

	// Revoking the token ends the session.
	if err := ts.Tokens.Revoke(ctx, "shop", manage); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, d.get(t, "/ui/"), "/ui/login")
}
