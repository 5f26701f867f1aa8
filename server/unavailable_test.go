package server

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/jobs"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// Redis stopped under a running server: requests answer 503 unavailable (never 500), /readyz
// fails while /healthz holds, and service comes back when Redis does, without a restart.
func TestRedisDownAndBack(t *testing.T) {
	t.Parallel()
	rs := redistest.StartServer(t)
	ts := startTestServer(t, Config{
		RedisURL: rs.URL(), Prefix: "down", AdminToken: testAdminToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Out: io.Discard,
	}, nil)
	tok := ts.token(t, "shop")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 1}), http.StatusCreated, "")

	rs.Stop()
	r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 2})
	wantStatus(t, r, http.StatusServiceUnavailable, "unavailable")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}}), http.StatusServiceUnavailable, "unavailable")
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/ns/shop/queues", tok, nil), http.StatusServiceUnavailable, "unavailable")
	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/namespaces", nil), http.StatusServiceUnavailable, "unavailable")
	wantStatus(t, ts.public(t, http.MethodGet, "/readyz", "", nil), http.StatusServiceUnavailable, "unavailable")
	wantStatus(t, ts.public(t, http.MethodGet, "/healthz", "", nil), http.StatusOK, "")
	if r := ts.adminDo(t, http.MethodGet, "/metrics", nil); r.Status != http.StatusOK {
		t.Fatalf("metrics while redis is down: %d", r.Status)
	}

	rs.Restart()
	testwait.Until(t, time.Minute, "publishing to work again", func() bool {
		return ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 3}).Status == http.StatusCreated
	})
	wantStatus(t, ts.public(t, http.MethodGet, "/readyz", "", nil), http.StatusOK, "")
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}, "count": 10})
	wantStatus(t, r, http.StatusOK, "")
	var got struct {
		Jobs []jobs.DeliveryJSON `json:"jobs"`
	}
	r.JSON(t, &got)
	if len(got.Jobs) != 2 {
		t.Fatalf("after recovery: %s", r.Body)
	}
}

// A Redis error reply that is not about availability (here WRONGTYPE from a damaged key inside a
// script) is a bug or damage, not an outage: 500 internal without Retry-After, and the answer of an
// undamaged queue is unaffected.
func TestScriptErrorIsInternalNotUnavailable(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	if err := ts.env.Client.Set(ctxT(t), ts.env.Prefix+":{shop:broken}:jobs", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := ts.public(t, http.MethodPost, "/v1/ns/shop/queues/broken/jobs", tok, map[string]any{"payload": 1})
	wantStatus(t, r, http.StatusInternalServerError, "internal")
	if r.Header.Get("Retry-After") != "" {
		t.Fatal("an internal error asks the client to retry")
	}
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 1}), http.StatusCreated, "")
}
