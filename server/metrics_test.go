package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/jobs"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	for range 2 {
		wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 1}), http.StatusCreated, "")
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/queues/later/jobs", tok, map[string]any{"payload": 1, "delay": 600}), http.StatusCreated, "")
	r := ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}})
	var got struct {
		Jobs []jobs.DeliveryJSON `json:"jobs"`
	}
	r.JSON(t, &got)
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs/"+got.Jobs[0].JobID+"/ack", tok, map[string]any{"delivery": 1}), http.StatusNoContent, "")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", "", nil), http.StatusUnauthorized, "")

	r = do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil) // no admin token needed
	wantStatus(t, r, http.StatusOK, "")
	body := string(r.Body)
	for _, want := range []string{
		`sluice_queue_jobs{namespace="shop",queue="emails",state="ready"} 1`,
		`sluice_queue_jobs{namespace="shop",queue="emails",state="leased"} 0`,
		`sluice_queue_jobs{namespace="shop",queue="later",state="delayed"} 1`,
		`sluice_queue_jobs{namespace="shop",queue="emails",state="dead"} 0`,
		`sluice_jobs_total{event="published",namespace="shop",queue="emails"} 2`,
		`sluice_jobs_total{event="consumed",namespace="shop",queue="emails"} 1`,
		`sluice_jobs_total{event="acked",namespace="shop",queue="emails"} 1`,
		`sluice_jobs_total{event="dead_lettered",namespace="shop",queue="emails"} 0`,
		`sluice_jobs_total{event="expired",namespace="shop",queue="emails"} 0`,
		`sluice_http_requests_total{code="201",listener="public",route="POST /v1/ns/{ns}/queues/{q}/jobs"} 3`,
		`sluice_http_requests_total{code="401",listener="public",route="POST /v1/ns/{ns}/queues/{q}/jobs"} 1`,
		`sluice_http_request_duration_seconds_bucket{listener="public",route="POST /v1/ns/{ns}/consume",le="+Inf"} 1`,
		`sluice_redis_errors_total 0`,
		`sluice_metrics_queues 2`,
		`sluice_metrics_queues_truncated 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestMetricsBoundQueues(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.MetricsMaxQueues = 1 })
	tok := ts.token(t, "shop")
	for _, q := range []string{"a", "b"} {
		wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/queues/"+q+"/jobs", tok, map[string]any{"payload": 1}), http.StatusCreated, "")
	}
	body := string(do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Body)
	if !strings.Contains(body, `sluice_metrics_queues_truncated 1`) || !strings.Contains(body, `queue="a"`) || strings.Contains(body, `queue="b"`) {
		t.Fatalf("metrics with one queue allowed:\n%s", body)
	}
}

// requestCount returns the sluice_http_requests_total sample with the labels ("" when absent).
func requestCount(ts *testServer, listener, route, code string) string {
	rec := httptest.NewRecorder()
	ts.srv.metrics.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	prefix := `sluice_http_requests_total{code="` + code + `",listener="` + listener + `",route="` + route + `"} `
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return ""
}

// TestUnauthenticatedUncleanAdminPathIsUnmatched: a 401 on a path no route serves (one the mux
// would clean) is counted under route "unmatched", not under the route of the cleaned path.
func TestUnauthenticatedUncleanAdminPathIsUnmatched(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantStatus(t, ts.adminDo(t, http.MethodGet, "//v1/namespaces", nil), http.StatusNotFound, "not_found")
	wantStatus(t, do(t, http.MethodGet, ts.AdminURL+"//v1/namespaces", "", nil), http.StatusUnauthorized, "unauthenticated")
	if n := requestCount(ts, "admin", "GET /v1/namespaces", "401"); n != "" {
		t.Errorf(`route "GET /v1/namespaces" counted %s 401s for //v1/namespaces, a path no route serves`, n)
	}
	if n := requestCount(ts, "admin", "unmatched", "401"); n != "1" {
		t.Errorf(`route "unmatched" counted %q 401s, want 1`, n)
	}
}
