package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/tenant"
)

// scheduleJSON is the part of a schedule's JSON the tests read.
type scheduleJSON struct {
	Name      string   `json:"name"`
	Cron      string   `json:"cron"`
	Every     *float64 `json:"every"`
	Timezone  string   `json:"timezone"`
	CatchUp   string   `json:"catch_up"`
	Paused    bool     `json:"paused"`
	NextRun   *string  `json:"next_run"`
	LastJobID string   `json:"last_job_id"`
	Fires     int64    `json:"fires"`
	Job       struct {
		Queue    string          `json:"queue"`
		Payload  json.RawMessage `json:"payload"`
		Priority int             `json:"priority"`
	} `json:"job"`
}

// A schedule set over HTTP fires through the server's own scheduler; pause, resume, trigger,
// list and delete answer as documented.
func TestScheduleRoutes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	r := ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/beat", tok, map[string]any{
		"every": 1, "catch_up": "all",
		"job": map[string]any{"queue": "beats", "payload": map[string]any{"n": 1}, "priority": 2, "attributes": map[string]string{"team": "ops"}},
	})
	wantStatus(t, r, http.StatusOK, "")
	var s scheduleJSON
	r.JSON(t, &s)
	if s.Name != "beat" || s.Every == nil || *s.Every != 1 || s.NextRun == nil || s.Job.Queue != "beats" || string(s.Job.Payload) != `{"n":1}` ||
		s.Job.Priority != 2 || s.CatchUp != "all" || s.Timezone != "UTC" {
		t.Fatalf("PUT schedule = %s", r.Body)
	}
	// The server's scheduler fires it: a consumer gets jobs that name the schedule and the tick.
	var got map[string]any
	testwait.Until(t, time.Minute, "a scheduled job", func() bool {
		r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"beats"}})
		var c struct {
			Jobs []map[string]any `json:"jobs"`
		}
		r.JSON(t, &c)
		if len(c.Jobs) == 0 {
			return false
		}
		got = c.Jobs[0]
		return true
	})
	attrs, _ := got["attributes"].(map[string]any)
	if attrs["schedule"] != "beat" || attrs["schedule_tick"] == nil || attrs["team"] != "ops" {
		t.Errorf("scheduled job = %v", got)
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/schedules/beat/pause", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &s)
	if !s.Paused || s.NextRun != nil {
		t.Errorf("paused = %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/schedules/beat/trigger", tok, nil)
	wantStatus(t, r, http.StatusCreated, "")
	var tr jobs.TriggerJSON
	r.JSON(t, &tr)
	if tr.JobID == "" {
		t.Errorf("trigger = %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/schedules/beat/resume", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &s)
	if s.Paused || s.NextRun == nil || s.LastJobID != tr.JobID || s.Fires < 2 {
		t.Errorf("resumed = %s", r.Body)
	}
	ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/nightly", tok, map[string]any{
		"cron": "0 2 * * *", "timezone": "America/New_York", "job": map[string]any{"queue": "reports", "payload": "x"}})
	r = ts.public(t, http.MethodGet, "/v1/ns/shop/schedules?limit=1", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	var page struct {
		Schedules []scheduleJSON `json:"schedules"`
		NextAfter string         `json:"next_after"`
	}
	r.JSON(t, &page)
	if len(page.Schedules) != 1 || page.Schedules[0].Name != "beat" || page.NextAfter != "beat" {
		t.Fatalf("first page = %s", r.Body)
	}
	r = ts.public(t, http.MethodGet, "/v1/ns/shop/schedules?limit=1&after=beat", tok, nil)
	page.NextAfter = ""
	r.JSON(t, &page)
	if len(page.Schedules) != 1 || page.Schedules[0].Name != "nightly" || page.Schedules[0].Cron != "0 2 * * *" {
		t.Fatalf("second page = %s", r.Body)
	}
	r = ts.public(t, http.MethodDelete, "/v1/ns/shop/schedules/beat", tok, nil)
	wantStatus(t, r, http.StatusNoContent, "")
	r = ts.public(t, http.MethodGet, "/v1/ns/shop/schedules/beat", tok, nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/schedules/beat/trigger", tok, nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
}

func TestScheduleBadInputIs400NamingTheField(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	job := map[string]any{"queue": "q", "payload": 1}
	for _, c := range []struct {
		field string
		body  any
	}{
		{"cron", map[string]any{"cron": "every day", "job": job}},
		{"timezone", map[string]any{"cron": "* * * * *", "timezone": "Nowhere/Land", "job": job}},
		{"every", map[string]any{"every": 0.5, "job": job}},
		{"every", map[string]any{"every": 0, "job": job}},
		{"end_at", map[string]any{"every": 60, "start_at": "2030-01-02T00:00:00Z", "end_at": "2030-01-01T00:00:00Z", "job": job}},
		{"start_at", map[string]any{"every": 60, "start_at": "tomorrow", "job": job}},
		{"catch_up", map[string]any{"every": 60, "catch_up": "some", "job": job}},
		{"job", map[string]any{"every": 60}},
		{"job.queue", map[string]any{"every": 60, "job": map[string]any{"queue": "a b", "payload": 1}}},
		{"job.payload", map[string]any{"every": 60, "job": map[string]any{"queue": "q"}}},
		{"job.priority", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "priority": 300}}},
		{"job.delay", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "delay": 5}}},
		{"job.callback.url", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "callback": map[string]any{"url": "https://not-allowed.example/x"}}}},
		{"end_at", map[string]any{"every": 60, "end_at": "2020-01-01T00:00:00Z", "job": job}},
		// Each field of the job is held to a publish's limits.
		{"job.payload", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "payload_base64": "AQ=="}}},
		{"job.tries", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "tries": 0}}},
		{"job.ttl", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "ttl": -1}}},
		{"job.ttl", map[string]any{"every": 60, "jitter": 30, "job": map[string]any{"queue": "q", "payload": 1, "ttl": 10}}},
		{"job.ttr", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "ttr": -1}}},
		{"job.backoff", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "backoff": map[string]any{"base": 60, "max": 1}}}},
		{"job.unique_key", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "unique_key": strings.Repeat("k", 513)}}},
		{"job.unique_for", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "unique_key": "k", "unique_for": -1}}},
		{"job.attributes", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "attributes": map[string]string{"schedule": "x"}}}},
		{"job.attributes", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "attributes": map[string]string{"k": strings.Repeat("v", 5000)}}}},
		{"job.run_at", map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1, "run_at": "2030-01-01T00:00:00Z"}}},
		{"jitter", map[string]any{"every": 60, "jitter": 7200, "job": job}},
		// Huge inputs are refused, and not echoed back whole.
		{"cron", map[string]any{"cron": strings.Repeat("1 ", 100_000), "job": job}},
		{"timezone", map[string]any{"every": 60, "timezone": strings.Repeat("A", 200_000), "job": job}},
	} {
		r := ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/s", tok, c.body)
		if r.Status != http.StatusBadRequest || r.ErrorField() != c.field {
			t.Errorf("PUT %.200v = %d %s, want 400 naming %s", c.body, r.Status, r.Body, c.field)
		}
		if strings.Contains(string(r.Body), "bytes) bytes)") {
			t.Errorf("an input shortened twice: %.400s", r.Body)
		}
		if len(r.Body) > 1200 {
			t.Errorf("a refused input is echoed in a body of %d bytes: %.300s", len(r.Body), r.Body)
		}
	}
	r := ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/bad%20name", tok, map[string]any{"every": 60, "job": job})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	r = ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/"+strings.Repeat("n", 5000), tok, map[string]any{"every": 60, "job": job})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "name" || len(r.Body) > 1200 {
		t.Errorf("a 5000-byte name: %d bytes, %.300s", len(r.Body), r.Body)
	}
	r = ts.public(t, http.MethodGet, "/v1/ns/shop/schedules", tok, nil)
	if !strings.Contains(string(r.Body), `"schedules":[]`) {
		t.Errorf("after bad input the list is %s, want empty", r.Body)
	}
}

func TestScheduleRoutesNeedTheRightPermissionAndNamespace(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	consumer := ts.token(t, "shop", tenant.PermConsume)
	other := ts.token(t, "other")
	body := map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1}}
	r := ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/s", consumer, body)
	wantStatus(t, r, http.StatusForbidden, "permission_denied")
	r = ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/s", other, body)
	if r.Status != http.StatusForbidden && r.Status != http.StatusNotFound {
		t.Errorf("another namespace's token: %d %s", r.Status, r.Body)
	}
	r = ts.public(t, http.MethodGet, "/v1/ns/shop/schedules", consumer, nil)
	wantStatus(t, r, http.StatusOK, "")
}
