package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// metricSample is the value of the /metrics sample line that starts with prefix (name and
// labels), or -1 when there is none.
func metricSample(t *testing.T, ts *testServer, prefix string) float64 {
	t.Helper()
	for _, l := range strings.Split(string(do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Body), "\n") {
		if v, ok := strings.CutPrefix(l, prefix+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", prefix, l)
			}
			return f
		}
	}
	return -1
}

// The server's scheduler counts what it does on /metrics: the jobs its ticks publish and the
// ticks they miss, by namespace, and how late each fire was in a histogram.
func TestScheduleMetrics(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	shop, capped := ts.token(t, "shop"), ts.token(t, "capped")
	every := func(tok, ns string) {
		wantStatus(t, ts.public(t, http.MethodPut, "/v1/ns/"+ns+"/schedules/beat", tok, map[string]any{
			"every": 1, "job": map[string]any{"queue": "beats", "payload": 1}}), http.StatusOK, "")
	}
	every(shop, "shop")
	// capped is at its quota of stored jobs: its ticks are missed.
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/capped/quotas", map[string]any{"max_stored_jobs": 1}), http.StatusOK, "")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/capped/queues/q/jobs", capped, map[string]any{"payload": 1}), http.StatusCreated, "")
	every(capped, "capped")
	testwait.Until(t, 30*time.Second, "fires and missed ticks counted", func() bool {
		return metricSample(t, ts, `sluice_schedule_fires_total{namespace="shop"}`) >= 2 &&
			metricSample(t, ts, `sluice_schedule_missed_total{namespace="capped"}`) >= 2
	})
	if n := metricSample(t, ts, "sluice_schedule_lateness_seconds_count"); n < 1 {
		t.Errorf("lateness histogram holds %v fires, want some", n)
	}
	if n := metricSample(t, ts, `sluice_schedule_fires_total{namespace="capped"}`); n > 0 {
		t.Errorf("a namespace past its storage quota had %v jobs published by its schedule", n)
	}
	var s scheduleJSON
	ts.public(t, http.MethodGet, "/v1/ns/capped/schedules/beat", capped, nil).JSON(t, &s)
	if s.Fires != 0 {
		t.Errorf("capped's schedule fired %d jobs past the quota", s.Fires)
	}
}
