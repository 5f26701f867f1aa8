package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/tenant"
)

// limitEnv is a test server with one token of namespace "rl" that both APIs can use.
type limitEnv struct {
	ts     *testServer
	secret string
	id     string
}

func newLimitEnv(t *testing.T, ts *testServer) *limitEnv {
	t.Helper()
	secret := ts.token(t, "rl")
	tok, err := ts.Tokens.Authenticate(ctxT(t), secret)
	if err != nil {
		t.Fatal(err)
	}
	return &limitEnv{ts: ts, secret: secret, id: tok.ID}
}

// publish publishes one job on the native API and returns the status.
func (e *limitEnv) publish(t *testing.T, ts *testServer) response {
	t.Helper()
	return ts.public(t, http.MethodPost, "/v1/ns/rl/queues/q/jobs", e.secret, map[string]any{"payload": "x"})
}

// lmstfyPublish publishes one job on the lmstfy API.
func (e *limitEnv) lmstfyPublish(t *testing.T, ts *testServer) response {
	t.Helper()
	return lmstfyDo(t, http.MethodPut, ts.PublicURL+"/api/rl/q", []byte("x"), "X-Token", e.secret)
}

// consume consumes without waiting on the native API.
func (e *limitEnv) consume(t *testing.T) response {
	t.Helper()
	return e.ts.public(t, http.MethodPost, "/v1/ns/rl/consume", e.secret, map[string]any{"queues": []string{"q"}})
}

func (e *limitEnv) lmstfyConsume(t *testing.T) response {
	t.Helper()
	return lmstfyDo(t, http.MethodGet, e.ts.PublicURL+"/api/rl/q", nil, "X-Token", e.secret)
}

// wantNativeLimited checks a native 429: the registry's body, Retry-After and RateLimit-*.
func wantNativeLimited(t *testing.T, r response, limit int) {
	t.Helper()
	wantStatus(t, r, http.StatusTooManyRequests, "rate_limited")
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Fatalf("Retry-After %q, want whole seconds >= 1", r.Header.Get("Retry-After"))
	}
	if r.Header.Get("RateLimit-Limit") != strconv.Itoa(limit) || r.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("RateLimit-Limit %q, RateLimit-Remaining %q", r.Header.Get("RateLimit-Limit"), r.Header.Get("RateLimit-Remaining"))
	}
}

// wantLmstfyLimited checks an lmstfy 429: its status and body, plus Retry-After.
func wantLmstfyLimited(t *testing.T, r response, id, action string) {
	t.Helper()
	wantLmstfy(t, r, http.StatusTooManyRequests,
		map[string]string{"msg": fmt.Sprintf("token(%s) %s reach the limit rate, please retry later", id, action)})
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
}

func TestTokenLimitSetThroughLmstfyIsEnforcedOnBothAPIs(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	e := newLimitEnv(t, ts)
	limit := map[string]int{"read": 2, "write": 2, "interval": 60}
	wantLmstfy(t, ts.adminDo(t, http.MethodPut, "/token/rl/"+e.secret+"/limit", limit), 200, map[string]any{"limiter": limit})

	// Write: one publish on each API, then both refuse.
	r := e.publish(t, ts)
	wantStatus(t, r, http.StatusCreated, "")
	if r.Header.Get("RateLimit-Limit") != "2" || r.Header.Get("RateLimit-Remaining") != "1" {
		t.Fatalf("allowed publish: RateLimit-Limit %q, RateLimit-Remaining %q", r.Header.Get("RateLimit-Limit"), r.Header.Get("RateLimit-Remaining"))
	}
	wantStatus(t, e.lmstfyPublish(t, ts), http.StatusCreated, "")
	wantNativeLimited(t, e.publish(t, ts), 2)
	wantLmstfyLimited(t, e.lmstfyPublish(t, ts), e.id, "produce")
	// A batch is one request, refused as a whole.
	batch := map[string]any{"jobs": []map[string]any{{"payload": 1}, {"payload": 2}}}
	wantNativeLimited(t, ts.public(t, http.MethodPost, "/v1/ns/rl/queues/q/jobs", e.secret, batch), 2)
	wantLmstfyLimited(t, lmstfyDo(t, http.MethodPut, ts.PublicURL+"/api/rl/q/bulk", []byte(`[1,2]`), "X-Token", e.secret), e.id, "produce")
	// Republish publishes a job, so it counts too (lmstfy leaves it out).
	wantLmstfyLimited(t, lmstfyDo(t, http.MethodPut, ts.PublicURL+"/api/rl/q/job/x", []byte("y"), "X-Token", e.secret), e.id, "produce")

	// Read: the two jobs are consumed, one on each API, then both refuse.
	var got struct{ Jobs []jobs.DeliveryJSON }
	r = e.consume(t)
	r.JSON(t, &got)
	if r.Status != http.StatusOK || len(got.Jobs) != 1 {
		t.Fatalf("consume: %d %s", r.Status, r.Body)
	}
	wantStatus(t, e.lmstfyConsume(t), http.StatusOK, "")
	wantNativeLimited(t, e.consume(t), 2)
	wantLmstfyLimited(t, e.lmstfyConsume(t), e.id, "consume")
	// Other routes are not limited.
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/ns/rl/queues/q", e.secret, nil), http.StatusOK, "")
	wantLmstfy(t, lmstfyDo(t, http.MethodGet, ts.PublicURL+"/api/rl/q/peek", nil, "X-Token", e.secret), http.StatusNotFound, lmstfyErr("the queue is empty"))

	body := string(do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Body)
	for _, want := range []string{
		`sluice_rate_limited_total{direction="write",namespace="rl"} 5`,
		`sluice_rate_limited_total{direction="read",namespace="rl"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestTokenLimitNativeAdmin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	e := newLimitEnv(t, ts)
	path := "/v1/namespaces/rl/tokens/" + e.id + "/limit"
	wantStatus(t, ts.adminDo(t, http.MethodGet, path, nil), http.StatusNotFound, "not_found")

	r := ts.adminDo(t, http.MethodPut, path, map[string]int{"write": 1, "interval": 60})
	wantStatus(t, r, http.StatusOK, "")
	want := tenant.Limit{Read: 0, Write: 1, Interval: 60}
	var got tenant.Limit
	r.JSON(t, &got)
	if got != want {
		t.Fatalf("PUT answered %+v, want %+v", got, want)
	}
	// Both admin APIs show it; the secret names the token too.
	ts.adminDo(t, http.MethodGet, "/v1/namespaces/rl/tokens/"+e.secret+"/limit", nil).JSON(t, &got)
	if got != want {
		t.Fatalf("GET answered %+v, want %+v", got, want)
	}
	wantLmstfy(t, ts.adminDo(t, http.MethodGet, "/token/rl/"+e.id+"/limit", nil), 200, want)

	// Enforced: one publish, then 429; reads stay free.
	wantStatus(t, e.publish(t, ts), http.StatusCreated, "")
	wantNativeLimited(t, e.publish(t, ts), 1)
	for range 3 {
		if r := e.consume(t); r.Status != http.StatusOK || r.Header.Get("RateLimit-Limit") != "" {
			t.Fatalf("consume with no read limit: %d %s, RateLimit-Limit %q", r.Status, r.Body, r.Header.Get("RateLimit-Limit"))
		}
	}

	// Deleting the limit lifts it at once.
	wantStatus(t, ts.adminDo(t, http.MethodDelete, path, nil), http.StatusNoContent, "")
	wantStatus(t, ts.adminDo(t, http.MethodDelete, path, nil), http.StatusNoContent, "")
	wantStatus(t, ts.adminDo(t, http.MethodGet, path, nil), http.StatusNotFound, "not_found")
	for range 3 {
		wantStatus(t, e.publish(t, ts), http.StatusCreated, "")
	}

	bad := []struct {
		body  any
		field string
	}{
		{map[string]int{"read": 1, "interval": 0}, "interval"},
		{map[string]int{"read": 1}, "interval"},
		{map[string]int{"interval": 1}, "read"},
		{map[string]int{"read": 0, "write": 0, "interval": 1}, "read"},
		{map[string]int{"read": -1, "write": 1, "interval": 1}, "read"},
		{map[string]int64{"read": 1 << 40, "interval": 1 << 20}, "interval"},
		{map[string]any{"read": 1, "interval": 1.5}, "interval"},
		{map[string]any{"read": 1, "interval": 1, "forbid_read": true}, "forbid_read"},
	}
	for _, b := range bad {
		r := ts.adminDo(t, http.MethodPut, path, b.body)
		if r.Status != http.StatusBadRequest || r.ErrorCode() != "invalid_argument" || r.ErrorField() != b.field {
			t.Errorf("PUT %v: %d %s, want invalid_argument on %s", b.body, r.Status, r.Body, b.field)
		}
	}
	ok := map[string]int{"read": 1, "interval": 1}
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/rl/tokens/0123456789abcdef/limit", ok), http.StatusNotFound, "not_found")
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/other/tokens/"+e.id+"/limit", ok), http.StatusNotFound, "not_found")
	wantStatus(t, ts.adminDo(t, http.MethodDelete, "/v1/namespaces/rl/tokens/0123456789abcdef/limit", nil), http.StatusNotFound, "not_found")

	// Revoking the token, or deleting its namespace, drops its limit.
	wantStatus(t, ts.adminDo(t, http.MethodPut, path, ok), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodDelete, "/v1/namespaces/rl/tokens/"+e.secret, nil), http.StatusNoContent, "")
	other := newLimitEnv(t, ts)
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/rl/tokens/"+other.id+"/limit", ok), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodDelete, "/v1/namespaces/rl", nil), http.StatusOK, "")
	wantLmstfy(t, ts.adminDo(t, http.MethodGet, "/limits", nil), 200, []any{})
}

func TestTokenLimitRefundsFailedRequests(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	e := newLimitEnv(t, ts)
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/rl/tokens/"+e.id+"/limit",
		map[string]int{"read": 1, "write": 1, "interval": 60}), http.StatusOK, "")

	// Publishes that fail do not use the write limit up, on either API.
	for range 3 {
		r := ts.public(t, http.MethodPost, "/v1/ns/rl/queues/q/jobs", e.secret, map[string]any{"priority": 1})
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		r = lmstfyDo(t, http.MethodPut, ts.PublicURL+"/api/rl/q?delay=soon", []byte("x"), "X-Token", e.secret)
		wantLmstfy(t, r, http.StatusBadRequest, lmstfyErr("invalid delay"))
		r = lmstfyDo(t, http.MethodPut, ts.PublicURL+"/api/rl/q/bulk", []byte(`[]`), "X-Token", e.secret)
		wantLmstfy(t, r, http.StatusBadRequest, lmstfyErr("no jobs"))
	}
	// Consumes that get no job do not use the read limit up.
	for range 3 {
		r := e.consume(t)
		if r.Status != http.StatusOK || string(r.Body) != "{\"jobs\":[]}\n" {
			t.Fatalf("empty consume: %d %s", r.Status, r.Body)
		}
		wantLmstfy(t, e.lmstfyConsume(t), http.StatusNotFound, lmstfyNoJob)
		wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/rl/consume", e.secret, map[string]any{}), http.StatusBadRequest, "invalid_argument")
	}
	// The whole limit is still there.
	wantStatus(t, e.publish(t, ts), http.StatusCreated, "")
	wantNativeLimited(t, e.publish(t, ts), 1)
	var got struct{ Jobs []jobs.DeliveryJSON }
	r := e.consume(t)
	r.JSON(t, &got)
	if len(got.Jobs) != 1 {
		t.Fatalf("consume: %d %s", r.Status, r.Body)
	}
	wantLmstfyLimited(t, e.lmstfyConsume(t), e.id, "consume")
}

func TestTokenLimitChangeAppliesOnEveryInstanceWithinASecond(t *testing.T) {
	t.Parallel()
	a := newTestServer(t)
	b := newTestServerOn(t, a.env)
	e := newLimitEnv(t, a)
	// B has looked the token up (no limit) and cached that.
	wantStatus(t, e.publish(t, b), http.StatusCreated, "")

	wantLmstfy(t, a.adminDo(t, http.MethodPost, "/token/rl/"+e.id+"/limit", map[string]int{"write": 1, "interval": 60}),
		201, map[string]any{"limiter": map[string]int{"read": 0, "write": 1, "interval": 60}})
	// Every lookup an instance made started before each change below, so once its token cache
	// has run out (TokenCacheTTL, at most a second), its very next request follows the change.
	b.waitOutTokenCache()
	wantStatus(t, e.publish(t, b), http.StatusCreated, "") // the one write of the minute
	wantStatus(t, e.publish(t, b), http.StatusTooManyRequests, "rate_limited")

	// Raised on B through the native API: A applies it within a second.
	wantStatus(t, b.adminDo(t, http.MethodPut, "/v1/namespaces/rl/tokens/"+e.id+"/limit",
		map[string]int{"write": 1000, "interval": 1}), http.StatusOK, "")
	a.waitOutTokenCache()
	wantStatus(t, e.publish(t, a), http.StatusCreated, "")

	// Lowered again, then deleted on A: B follows within a second each time.
	wantStatus(t, a.adminDo(t, http.MethodPut, "/v1/namespaces/rl/tokens/"+e.id+"/limit",
		map[string]int{"write": 1, "interval": 60}), http.StatusOK, "")
	b.waitOutTokenCache()
	e.lmstfyPublish(t, b) // the minute's one write, unless the first limit's still counts
	if r := e.lmstfyPublish(t, b); r.Status != http.StatusTooManyRequests {
		t.Fatalf("B's second write under the lowered limit: %d %s, want 429", r.Status, r.Body)
	}
	wantLmstfy(t, a.adminDo(t, http.MethodDelete, "/token/rl/"+e.secret+"/limit", nil), 200, map[string]string{"msg": "success"})
	b.waitOutTokenCache()
	if r := e.lmstfyPublish(t, b); r.Status != http.StatusCreated {
		t.Fatalf("B's write after the limit was deleted: %d %s, want 201", r.Status, r.Body)
	}
}

func TestTokenLimitStateIsPerToken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	one, two := newLimitEnv(t, ts), newLimitEnv(t, ts)
	free := newLimitEnv(t, ts)
	for _, e := range []*limitEnv{one, two} {
		wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/rl/tokens/"+e.id+"/limit",
			map[string]int{"write": 2, "interval": 60}), http.StatusOK, "")
	}
	for range 2 {
		wantStatus(t, one.publish(t, ts), http.StatusCreated, "")
	}
	wantNativeLimited(t, one.publish(t, ts), 2)
	// The second token with the same limit has its own state; a token without a limit is free.
	for range 2 {
		wantStatus(t, two.lmstfyPublish(t, ts), http.StatusCreated, "")
	}
	wantLmstfyLimited(t, two.lmstfyPublish(t, ts), two.id, "produce")
	for range 10 {
		r := free.publish(t, ts)
		if r.Status != http.StatusCreated || r.Header.Get("RateLimit-Limit") != "" {
			t.Fatalf("publish without a limit: %d %s, RateLimit-Limit %q", r.Status, r.Body, r.Header.Get("RateLimit-Limit"))
		}
	}
}
