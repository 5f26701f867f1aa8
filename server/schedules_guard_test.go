package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/tenant"
)

// A token of another namespace can neither read, list, set, pause, resume, trigger nor delete a
// namespace's schedule, whatever its permissions: each route answers 403 and the schedule is as
// it was, its ticks untouched and no job published.
func TestSchedulesOfAnotherNamespaceAreOutOfReach(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	shop := ts.token(t, "shop")
	other := ts.token(t, "other", tenant.PermPublish, tenant.PermConsume, tenant.PermManage)
	wantStatus(t, ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/nightly", shop, map[string]any{
		"cron": "0 2 * * *", "job": map[string]any{"queue": "reports", "payload": 1}}), http.StatusOK, "")
	var before scheduleJSON
	ts.public(t, http.MethodGet, "/v1/ns/shop/schedules/nightly", shop, nil).JSON(t, &before)
	body := map[string]any{"every": 1, "job": map[string]any{"queue": "reports", "payload": "taken over"}}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/v1/ns/shop/schedules", nil},
		{http.MethodGet, "/v1/ns/shop/schedules/nightly", nil},
		{http.MethodPut, "/v1/ns/shop/schedules/nightly", body},
		{http.MethodPut, "/v1/ns/shop/schedules/new", body},
		{http.MethodPost, "/v1/ns/shop/schedules/nightly/pause", nil},
		{http.MethodPost, "/v1/ns/shop/schedules/nightly/resume", nil},
		{http.MethodPost, "/v1/ns/shop/schedules/nightly/trigger", nil},
		{http.MethodDelete, "/v1/ns/shop/schedules/nightly", nil},
	} {
		r := ts.public(t, c.method, c.path, other, c.body)
		wantStatus(t, r, http.StatusForbidden, "permission_denied")
		if strings.Contains(string(r.Body), "reports") {
			t.Errorf("%s %s answered another namespace's schedule: %s", c.method, c.path, r.Body)
		}
	}
	var after scheduleJSON
	ts.public(t, http.MethodGet, "/v1/ns/shop/schedules/nightly", shop, nil).JSON(t, &after)
	if after.Paused || after.Fires != 0 || after.Cron != "0 2 * * *" || string(after.Job.Payload) != "1" ||
		*after.NextRun != *before.NextRun {
		t.Errorf("the schedule changed: %+v, was %+v", after, before)
	}
	var list struct {
		Schedules []scheduleJSON `json:"schedules"`
	}
	ts.public(t, http.MethodGet, "/v1/ns/shop/schedules", shop, nil).JSON(t, &list)
	if len(list.Schedules) != 1 {
		t.Errorf("shop's schedules: %+v", list.Schedules)
	}
	if st, err := ts.Queue.Stats(ctxT(t), "shop", "reports"); err != nil || st.Ready+st.Delayed != 0 {
		t.Errorf("jobs published by another namespace's token: %+v, %v", st, err)
	}
	// The job of a schedule goes to a queue of the schedule's namespace: the body names no
	// namespace, and a queue name cannot reach another one.
	for _, job := range []map[string]any{
		{"queue": "q", "payload": 1, "namespace": "other"},
		{"queue": "other:q", "payload": 1},
		{"queue": "../other/q", "payload": 1},
	} {
		r := ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/escape", shop, map[string]any{"every": 60, "job": job})
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	}
}

// A namespace at its quota of schedules gets 429 quota_exceeded naming max_schedules for a new
// schedule, and nothing is stored; replacing one of its schedules still works, another namespace
// is not held by it, and the usage counts the schedules.
func TestScheduleQuota(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.NamespaceQuotas.MaxSchedules = 5 })
	shop, other := ts.token(t, "shop"), ts.token(t, "other")
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/quotas", map[string]any{"max_schedules": 2}), http.StatusOK, "")
	set := func(tok, ns, name string) response {
		return ts.public(t, http.MethodPut, "/v1/ns/"+ns+"/schedules/"+name, tok,
			map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1}})
	}
	wantStatus(t, set(shop, "shop", "a"), http.StatusOK, "")
	wantStatus(t, set(shop, "shop", "b"), http.StatusOK, "")
	r := set(shop, "shop", "c")
	wantStatus(t, r, http.StatusTooManyRequests, "quota_exceeded")
	if r.ErrorField() != "max_schedules" {
		t.Fatalf("quota_exceeded names %q: %s", r.ErrorField(), r.Body)
	}
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/ns/shop/schedules/c", shop, nil), http.StatusNotFound, "not_found")
	wantStatus(t, set(shop, "shop", "a"), http.StatusOK, "")
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		wantStatus(t, set(other, "other", name), http.StatusOK, "")
	}
	wantStatus(t, set(other, "other", "f"), http.StatusTooManyRequests, "quota_exceeded") // the server's default
	if a := ts.quotaOf(t, "shop"); a.Quotas.MaxSchedules != 2 || a.Usage.Schedules != 2 {
		t.Fatalf("shop's quotas and usage: %+v", a)
	}
	var own quotaAnswer
	ts.public(t, http.MethodGet, "/v1/ns/other/usage", other, nil).JSON(t, &own)
	if own.Quotas.MaxSchedules != 5 || own.Usage.Schedules != 5 {
		t.Fatalf("other's own usage: %+v", own)
	}
	wantStatus(t, ts.public(t, http.MethodDelete, "/v1/ns/shop/schedules/b", shop, nil), http.StatusNoContent, "")
	wantStatus(t, set(shop, "shop", "c"), http.StatusOK, "")
}

// A trigger publishes one job, as a publish does: it is charged to the token's write limit, so a
// flood of triggers is refused with 429 rate_limited like a flood of publishes, and past the
// namespace's storage quota it is refused with 429 quota_exceeded.
func TestTriggerFloodIsBoundedLikePublishes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	e := newLimitEnv(t, ts)
	wantStatus(t, ts.public(t, http.MethodPut, "/v1/ns/rl/schedules/s", e.secret, map[string]any{
		"cron": "0 2 * * *", "job": map[string]any{"queue": "q", "payload": 1}}), http.StatusOK, "")
	limit := map[string]int{"read": 0, "write": 2, "interval": 60}
	wantLmstfy(t, ts.adminDo(t, http.MethodPut, "/token/rl/"+e.secret+"/limit", limit), 200, map[string]any{"limiter": limit})
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/rl/schedules/s/trigger", e.secret, nil), http.StatusCreated, "")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/rl/schedules/s/trigger", e.secret, nil), http.StatusCreated, "")
	wantNativeLimited(t, ts.public(t, http.MethodPost, "/v1/ns/rl/schedules/s/trigger", e.secret, nil), 2)
	wantNativeLimited(t, e.publish(t, ts), 2)

	shop := ts.token(t, "shop")
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/quotas", map[string]any{"max_stored_jobs": 1}), http.StatusOK, "")
	wantStatus(t, ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/s", shop, map[string]any{
		"cron": "0 2 * * *", "job": map[string]any{"queue": "q", "payload": 1}}), http.StatusOK, "")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/schedules/s/trigger", shop, nil), http.StatusCreated, "")
	r := ts.public(t, http.MethodPost, "/v1/ns/shop/schedules/s/trigger", shop, nil)
	wantStatus(t, r, http.StatusTooManyRequests, "quota_exceeded")
	if r.ErrorField() != "max_stored_jobs" {
		t.Fatalf("quota_exceeded names %q: %s", r.ErrorField(), r.Body)
	}
}
