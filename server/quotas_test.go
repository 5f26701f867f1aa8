package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server/tenant"
)

// quotaOf reads a namespace's quotas and usage from the admin API.
func (ts *testServer) quotaOf(t *testing.T, ns string) quotaAnswer {
	t.Helper()
	r := ts.adminDo(t, http.MethodGet, "/v1/namespaces/"+ns+"/quotas", nil)
	wantStatus(t, r, http.StatusOK, "")
	var a quotaAnswer
	r.JSON(t, &a)
	return a
}

// A namespace at its quota of queues gets 429 quota_exceeded naming max_queues for a new queue,
// while its existing queues and the other namespaces go on; the usage says what it holds.
func TestQueueQuota(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	shop, other := ts.token(t, "shop"), ts.token(t, "other")
	r := ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/quotas", map[string]any{"max_queues": 3})
	wantStatus(t, r, http.StatusOK, "")
	for i := range 3 {
		wantStatus(t, ts.public(t, http.MethodPost, fmt.Sprintf("/v1/ns/shop/queues/q%d/jobs", i), shop, `{"payload":1}`), http.StatusCreated, "")
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/queues/q3/jobs", shop, `{"payload":1}`)
	wantStatus(t, r, http.StatusTooManyRequests, "quota_exceeded")
	if r.ErrorField() != "max_queues" {
		t.Fatalf("quota_exceeded names %q: %s", r.ErrorField(), r.Body)
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/queues/q3/pause", shop, nil), http.StatusTooManyRequests, "quota_exceeded")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/queues/q0/jobs", shop, `{"payload":2}`), http.StatusCreated, "")
	for i := range 5 {
		wantStatus(t, ts.public(t, http.MethodPost, fmt.Sprintf("/v1/ns/other/queues/q%d/jobs", i), other, `{"payload":1}`), http.StatusCreated, "")
	}
	if a := ts.quotaOf(t, "shop"); a.Quotas.MaxQueues != 3 || a.Usage.Queues != 3 || a.Usage.Tokens != 1 {
		t.Fatalf("shop's quotas and usage: %+v", a)
	}
	if a := ts.quotaOf(t, "other"); a.Quotas.MaxQueues != 0 || a.Usage.Queues != 5 {
		t.Fatalf("other's quotas and usage: %+v", a)
	}
	// Back to the default (none): the queue is accepted.
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/quotas", map[string]any{"max_queues": nil}), http.StatusOK, "")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/queues/q3/jobs", shop, `{"payload":1}`), http.StatusCreated, "")
}

// The server's default quotas hold every namespace that set none; a namespace's own quota of
// tokens refuses one more token with 429 naming max_tokens.
func TestDefaultQuotasAndTokenQuota(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.NamespaceQuotas.MaxTokens = 2 })
	ts.token(t, "shop")
	wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/tokens", map[string]any{}), http.StatusCreated, "")
	r := ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/tokens", map[string]any{})
	wantStatus(t, r, http.StatusTooManyRequests, "quota_exceeded")
	if r.ErrorField() != "max_tokens" {
		t.Fatalf("quota_exceeded names %q", r.ErrorField())
	}
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/quotas", map[string]any{"max_tokens": 3}), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/tokens", map[string]any{}), http.StatusCreated, "")
	if a := ts.quotaOf(t, "shop"); a.Usage.Tokens != 3 || a.Quotas.MaxTokens != 3 {
		t.Fatalf("usage: %+v", a)
	}
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/quotas", map[string]any{"max_tokens": -1}), http.StatusBadRequest, "invalid_argument")
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/nowhere/quotas", map[string]any{"max_tokens": 1}), http.StatusNotFound, "not_found")
}

// A namespace's token reads its own quotas and usage, cannot read another's, and cannot set any.
func TestQuotasAgainstNamespaceTokens(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	shop := ts.token(t, "shop")
	ts.token(t, "other")
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/other/quotas", map[string]any{"max_queues": 7}), http.StatusOK, "")
	r := ts.public(t, http.MethodGet, "/v1/ns/shop/usage", shop, nil)
	wantStatus(t, r, http.StatusOK, "")
	if strings.Contains(string(r.Body), "other") || !strings.Contains(string(r.Body), `"namespace":"shop"`) {
		t.Fatalf("shop's usage: %s", r.Body)
	}
	r = ts.public(t, http.MethodGet, "/v1/ns/other/usage", shop, nil)
	wantStatus(t, r, http.StatusForbidden, "permission_denied")
	if strings.Contains(string(r.Body), "7") {
		t.Fatalf("another namespace's quota leaked: %s", r.Body)
	}
	for _, m := range []string{http.MethodPut, http.MethodPost, http.MethodDelete} {
		if r := ts.public(t, m, "/v1/ns/shop/usage", shop, `{"max_queues":1000000}`); r.Status < 400 {
			t.Fatalf("%s usage with a namespace token: %d", m, r.Status)
		}
	}
	// The admin routes take the admin token only: a namespace token is not one.
	for _, m := range []string{http.MethodGet, http.MethodPut} {
		r := do(t, m, ts.AdminURL+"/v1/namespaces/shop/quotas", shop, `{"max_queues":1000000}`)
		wantStatus(t, r, http.StatusUnauthorized, "unauthenticated")
	}
	if a := ts.quotaOf(t, "shop"); a.Quotas.MaxQueues != 0 || a.Settings.MaxQueues != nil {
		t.Fatalf("shop's quotas changed: %+v", a)
	}
}

// nearlyFullServer starts a server on a Redis of its own whose maxmemory leaves 8 MB above what
// it holds once the server is up, with a token each for the namespaces "noisy" and "canary".
func nearlyFullServer(t *testing.T, quotas tenant.Quotas) (ts *testServer, rdb *redis.Client, noisy, canary string) {
	t.Helper()
	rs := redistest.StartServer(t, "appendonly no")
	rdb = redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ts = startTestServer(t, Config{
		RedisURL: rs.URL(), Prefix: "noisy", AdminToken: testAdminToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Out: io.Discard,
		NamespaceQuotas: quotas,
	}, nil)
	noisy, canary = ts.token(t, "noisy"), ts.token(t, "canary")
	if err := rdb.ConfigSet(ctxT(t), "maxmemory", strconv.FormatInt(usedMemory(t, rdb)+8<<20, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	return ts, rdb, noisy, canary
}

// flood publishes n jobs of the noisy namespace, job i to the queue queueOf(i), and one of the
// canary namespace every canaryEvery of them, which must be accepted. A noisy job must be either
// created or refused with quota_exceeded naming field (a Redis that filled first fails the test);
// flood returns how many were refused.
func (ts *testServer) flood(t *testing.T, noisy, canary string, n, canaryEvery int, queueOf func(i int) string, payload, field string) (refused int) {
	t.Helper()
	for i := range n {
		r := ts.public(t, http.MethodPost, "/v1/ns/noisy/queues/"+queueOf(i)+"/jobs", noisy, payload)
		switch {
		case r.Status == http.StatusTooManyRequests && r.ErrorCode() == "quota_exceeded" && r.ErrorField() == field:
			refused++
		case r.Status != http.StatusCreated:
			t.Fatalf("noisy publish %d: %d %s (Redis filled before the quota held)", i, r.Status, r.Body)
		}
		if i%canaryEvery == 0 {
			wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/canary/queues/c/jobs", canary, `{"payload":1}`), http.StatusCreated, "")
		}
	}
	return refused
}

// With Redis near maxmemory, a noisy namespace creating queue after queue meets its quota before
// Redis is full: it gets its own 429s, and the canary namespace keeps publishing.
func TestNoisyNamespaceMeetsItsQuotaBeforeRedisIsFull(t *testing.T) {
	t.Parallel()
	// 8 MB of headroom: 200 queues of a 16 KB job fit, the 2,000 the noisy namespace tries do not.
	ts, _, noisy, canary := nearlyFullServer(t, tenant.Quotas{MaxQueues: 200})
	payload := `{"payload":"` + strings.Repeat("x", 16<<10) + `"}`
	if refused := ts.flood(t, noisy, canary, 2000, 100, func(i int) string { return fmt.Sprintf("q%d", i) }, payload, "max_queues"); refused != 1800 {
		t.Fatalf("noisy namespace refused %d times, want 1800", refused)
	}
	for range 100 {
		wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/canary/queues/c/jobs", canary, `{"payload":1}`), http.StatusCreated, "")
	}
	wantStatus(t, ts.public(t, http.MethodGet, "/readyz", "", nil), http.StatusOK, "")
}

func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(ctxT(t), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no used_memory in INFO")
	return 0
}

// The dashboard's namespace page shows what the namespace holds beside its quotas.
func TestDashboardShowsUsageAndQuotas(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/quotas", map[string]any{"max_queues": 40}), http.StatusOK, "")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/queues/mail/jobs", tok, `{"payload":1}`), http.StatusCreated, "")
	d := newDashboard(t, ts)
	d.login(t)
	wantPage(t, d.get(t, "/ui/ns/shop"), http.StatusOK, `data-usage="queues">1</td><td class="n">40</td>`, `data-usage="tokens">1</td><td class="n">none</td>`,
		`data-usage="stored_jobs">1</td><td class="n">none</td>`)
}

// A namespace at its quota of stored jobs (the server's default here) gets 429 quota_exceeded
// naming max_stored_jobs on every publish, while another
// namespace with a quota of its own keeps publishing; the usage says what each stores.
func TestStoredJobsQuotaOverHTTP(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.NamespaceQuotas.MaxStoredJobs = 3 })
	shop, other := ts.token(t, "shop"), ts.token(t, "other")
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/other/quotas", map[string]any{"max_stored_jobs": 100}), http.StatusOK, "")
	for i := range 3 {
		wantStatus(t, ts.public(t, http.MethodPost, fmt.Sprintf("/v1/ns/shop/queues/q%d/jobs", i), shop, `{"payload":1}`), http.StatusCreated, "")
	}
	r := ts.public(t, http.MethodPost, "/v1/ns/shop/queues/q0/jobs", shop, `{"payload":1}`)
	wantStatus(t, r, http.StatusTooManyRequests, "quota_exceeded")
	if r.ErrorField() != "max_stored_jobs" {
		t.Fatalf("quota_exceeded names %q: %s", r.ErrorField(), r.Body)
	}
	for i := range 10 {
		wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/other/queues/q/jobs", other, fmt.Sprintf(`{"payload":%d}`, i)), http.StatusCreated, "")
	}
	if a := ts.quotaOf(t, "shop"); a.Quotas.MaxStoredJobs != 3 || a.Usage.StoredJobs != 3 || a.Usage.StoredBytes <= 0 || a.Usage.MeasuredAt.IsZero() {
		t.Fatalf("shop's quotas and usage: %+v", a)
	}
	if a := ts.quotaOf(t, "other"); a.Quotas.MaxStoredJobs != 100 || a.Usage.StoredJobs != 10 {
		t.Fatalf("other's quotas and usage: %+v", a)
	}
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/shop/quotas", map[string]any{"max_stored_bytes": -1}), http.StatusBadRequest, "invalid_argument")
}

// With Redis near maxmemory, a noisy namespace filling one queue with large jobs meets its quota
// of stored bytes before Redis is full: it gets its own 429s and the canary namespace keeps
// publishing. Once Redis itself refuses writes (out of memory), /readyz says not ready.
func TestNoisyNamespaceMeetsItsStoredBytesQuotaBeforeRedisIsFull(t *testing.T) {
	t.Parallel()
	// 8 MB of headroom: the quota's 2 MB fit, the 16 MB the noisy namespace tries do not.
	ts, rdb, noisy, canary := nearlyFullServer(t, tenant.Quotas{})
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/noisy/quotas", map[string]any{"max_stored_bytes": 2 << 20}), http.StatusOK, "")
	payload := `{"payload":"` + strings.Repeat("x", 16<<10) + `"}`
	refused := ts.flood(t, noisy, canary, 1000, 50, func(int) string { return "bulk" }, payload, "max_stored_bytes")
	a := ts.quotaOf(t, "noisy")
	if refused < 800 || a.Usage.StoredBytes > 3<<20 {
		t.Fatalf("noisy namespace refused %d of 1000 and stores %d bytes; want most refused and about 2 MiB", refused, a.Usage.StoredBytes)
	}
	wantStatus(t, ts.public(t, http.MethodGet, "/readyz", "", nil), http.StatusOK, "")

	if err := rdb.ConfigSet(ctxT(t), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/canary/queues/c/jobs", canary, `{"payload":1}`), http.StatusServiceUnavailable, "unavailable")
	wantNotReady(t, ts, "out of memory")
	if err := rdb.ConfigSet(ctxT(t), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ts.public(t, http.MethodGet, "/readyz", "", nil), http.StatusOK, "")
}

// The lmstfy-compatible routes are held to the same quotas, in lmstfy's error shape: a publish to
// a new queue past max_queues, a publish, a bulk publish and a republish past max_stored_jobs
// and a token past max_tokens answer 429 and create nothing.
func TestQuotasHoldOnTheLmstfyRoutes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	e := lmstfyEnvOn(t, ts)
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/namespaces/"+e.ns+"/quotas",
		map[string]any{"max_queues": 2, "max_tokens": 2, "max_stored_jobs": 3}), http.StatusOK, "")
	refused := func(r response, quota string) {
		t.Helper()
		if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), "quota "+quota) {
			t.Fatalf("got %d %s, want 429 naming %s", r.Status, r.Body, quota)
		}
	}
	publish := func(q string) {
		t.Helper()
		if r := e.api(t, http.MethodPut, q, []byte("x")); r.Status != http.StatusCreated {
			t.Fatalf("publish to %s: %d %s", q, r.Status, r.Body)
		}
	}
	publish("a")
	publish("b")
	refused(e.api(t, http.MethodPut, "c", []byte("x")), "max_queues")
	publish("b")
	refused(e.api(t, http.MethodPut, "a", []byte("x")), "max_stored_jobs")
	refused(e.api(t, http.MethodPut, "a/bulk", []byte(`["x","y"]`)), "max_stored_jobs")
	refused(e.api(t, http.MethodPut, "a/job/01M8HTA2D32NCN7CT99RN2SCFR", []byte("x")), "max_stored_jobs")
	if r := ts.adminDo(t, http.MethodPost, "/token/"+e.ns+"?description=second", nil); r.Status != http.StatusCreated {
		t.Fatalf("second token: %d %s", r.Status, r.Body)
	}
	refused(ts.adminDo(t, http.MethodPost, "/token/"+e.ns+"?description=third", nil), "max_tokens")
	if a := ts.quotaOf(t, e.ns); a.Usage.Queues != 2 || a.Usage.Tokens != 2 || a.Usage.StoredJobs != 3 {
		t.Fatalf("usage after the refusals: %+v; want 2 queues, 2 tokens, 3 jobs", a.Usage)
	}
}
