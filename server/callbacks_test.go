package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server/callbacks"
	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/tasks"
)

// hookReceiver is a real HTTP server that verifies and records the callbacks it gets.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	got    []string // bodies of verified calls
	ids    []string
	bad    int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if err := callback.Verify(h.secret, r.Header, body); err != nil {
			h.bad++
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		h.got = append(h.got, string(body))
		h.ids = append(h.ids, r.Header.Get(callback.HeaderWebhookID))
		_, _ = io.WriteString(w, `{"closed":true}`)
	}))
	t.Cleanup(h.Close)
	return h
}

// setSecret makes the receiver verify signatures with secret.
func (h *hookReceiver) setSecret(secret string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.secret = secret
}

func (h *hookReceiver) calls() (bodies, ids []string, bad int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...), append([]string(nil), h.ids...), h.bad
}

const cbpath = "/v1/namespaces/shop/callbacks"

func TestCallbackThroughTheServer(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	recv := newHookReceiver(t)

	r := ts.adminDo(t, http.MethodPost, cbpath+"/secrets", nil)
	wantStatus(t, r, http.StatusCreated, "")
	var set callbacks.SettingsJSON
	r.JSON(t, &set)
	if len(set.Secrets) != 1 || !strings.HasPrefix(set.Secrets[0], callback.SecretPrefix) {
		t.Fatalf("after rotating: %s", r.Body)
	}
	recv.mu.Lock()
	recv.secret = set.Secrets[0]
	recv.mu.Unlock()
	wantStatus(t, ts.adminDo(t, http.MethodPost, cbpath+"/destinations", map[string]any{"prefix": recv.URL + "/hooks"}), http.StatusOK, "")
	r = ts.adminDo(t, http.MethodPut, cbpath+"/allow_private", map[string]any{"allow_private": true})
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &set)
	if !set.AllowPrivate || len(set.Destinations) != 1 {
		t.Fatalf("settings = %s", r.Body)
	}

	// Not under an allowed destination: refused at publish, naming the field.
	r = ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 1, "callback": map[string]any{"url": recv.URL + "/admin"}})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "callback.url" {
		t.Fatalf("field = %q", r.ErrorField())
	}
	r = ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"jobs": []any{
		map[string]any{"payload": 1},
		map[string]any{"payload": 2, "callback": map[string]any{"url": "https://elsewhere.example/x"}},
	}})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "jobs[1].callback.url" {
		t.Fatalf("field = %q", r.ErrorField())
	}
	r = ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 1, "ttr": 1, "callback": map[string]any{"url": recv.URL + "/hooks", "timeout": 2}})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "ttr" {
		t.Fatalf("a ttr under the callback's timeout: field = %q", r.ErrorField())
	}

	r = ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{
		"payload": map[string]any{"order": 42}, "delay": 0.05,
		"callback": map[string]any{"url": recv.URL + "/hooks/close", "headers": map[string]string{"X-Tenant": "acme"}, "timeout": 5},
	})
	wantStatus(t, r, http.StatusCreated, "")
	var pub jobs.PublishResult
	r.JSON(t, &pub)

	// Consumers never get it.
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}, "timeout": 0.2})
	if strings.Contains(string(r.Body), pub.JobID) {
		t.Fatalf("a consumer got the callback job: %s", r.Body)
	}
	var job jobs.JobJSON
	testwait.Until(t, time.Minute, "the callback job done", func() bool {
		r := ts.public(t, http.MethodGet, qpath+"/jobs/"+pub.JobID, tok, nil)
		r.JSON(t, &job)
		return job.State == "done"
	})
	if string(job.Result) != `{"closed":true}` || job.Callback == nil || job.Callback.URL != recv.URL+"/hooks/close" || job.Callback.Method != http.MethodPost {
		t.Fatalf("job = %+v", job)
	}
	bodies, ids, bad := recv.calls()
	if len(bodies) != 1 || bodies[0] != `{"order":42}` || ids[0] != pub.JobID || bad != 0 {
		t.Fatalf("receiver got %v %v, %d unverified", bodies, ids, bad)
	}

	metrics := string(do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Body)
	for _, want := range []string{
		`sluice_callback_deliveries_total{namespace="shop",outcome="delivered"} 1`,
		`sluice_callback_duration_seconds_count 1`,
		`sluice_callback_lateness_seconds_count 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestCallbackSettingsAdminRoutes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.token(t, "shop")

	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/namespaces/nowhere/callbacks", nil), http.StatusNotFound, "not_found")
	r := ts.adminDo(t, http.MethodPost, cbpath+"/secrets", map[string]any{"secret": "hunter2"})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "secret" {
		t.Fatalf("field = %q", r.ErrorField())
	}
	own := callback.NewSecret()
	wantStatus(t, ts.adminDo(t, http.MethodPost, cbpath+"/secrets", map[string]any{"secret": own}), http.StatusCreated, "")
	r = ts.adminDo(t, http.MethodPost, cbpath+"/secrets", nil)
	var set callbacks.SettingsJSON
	r.JSON(t, &set)
	if len(set.Secrets) != 2 || set.Secrets[1] != own {
		t.Fatalf("during a rotation: %s", r.Body)
	}
	r = ts.adminDo(t, http.MethodDelete, cbpath+"/secrets/previous", nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &set)
	if len(set.Secrets) != 1 || set.Secrets[0] == own {
		t.Fatalf("after retiring: %s", r.Body)
	}

	for _, bad := range []any{map[string]any{"prefix": "ftp://x"}, map[string]any{"prefix": "https://u:p@x.com"}, map[string]any{}, map[string]any{"prefix": 1}} {
		r := ts.adminDo(t, http.MethodPost, cbpath+"/destinations", bad)
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if r.ErrorField() != "prefix" {
			t.Fatalf("%v: field = %q", bad, r.ErrorField())
		}
	}
	wantStatus(t, ts.adminDo(t, http.MethodPost, cbpath+"/destinations", map[string]any{"prefix": "https://hooks.example.com/a"}), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodDelete, cbpath+"/destinations?prefix="+url.QueryEscape("https://hooks.example.com/b"), nil), http.StatusNotFound, "not_found")
	wantStatus(t, ts.adminDo(t, http.MethodDelete, cbpath+"/destinations", nil), http.StatusBadRequest, "invalid_argument")
	r = ts.adminDo(t, http.MethodDelete, cbpath+"/destinations?prefix="+url.QueryEscape("https://hooks.example.com/a"), nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &set)
	if len(set.Destinations) != 0 {
		t.Fatalf("after removing: %s", r.Body)
	}
	wantStatus(t, ts.adminDo(t, http.MethodPut, cbpath+"/allow_private", map[string]any{}), http.StatusBadRequest, "invalid_argument")
	wantStatus(t, ts.adminDo(t, http.MethodPut, cbpath+"/allow_private", map[string]any{"allow_private": "yes"}), http.StatusBadRequest, "invalid_argument")

	// Deleting the namespace deletes its callback settings.
	wantStatus(t, ts.adminDo(t, http.MethodPost, cbpath+"/destinations", map[string]any{"prefix": "https://hooks.example.com/a"}), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodDelete, "/v1/namespaces/shop", nil), http.StatusOK, "")
	ts.token(t, "shop")
	r = ts.adminDo(t, http.MethodGet, cbpath, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &set)
	if len(set.Secrets)+len(set.Destinations) != 0 {
		t.Fatalf("a deleted namespace's settings came back: %s", r.Body)
	}
}

// A callback under a request queue endpoint's target URL counts against that endpoint through the
// server: its slot shows in the endpoint's stats and metrics.
func TestCallbackCountsAgainstItsEndpointThroughTheServer(t *testing.T) {
	t.Parallel()
	ts := relayServer(t) // the endpoint is on loopback, as the receiver is
	tok := ts.token(t, "shop")
	recv := newHookReceiver(t)
	recv.setSecret(ts.allowCallbacks(t, recv.URL+"/hooks"))
	ts.putEndpoint(t, "orders-svc", map[string]any{"target_url": recv.URL + "/hooks/orders", "concurrency": 1, "qps": 50})

	const n = 3
	for i := range n {
		r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{
			"payload": map[string]any{"order": i}, "callback": map[string]any{"url": recv.URL + "/hooks/orders/close"},
		})
		wantStatus(t, r, http.StatusCreated, "")
	}
	testwait.Until(t, time.Minute, "every callback delivered", func() bool {
		bodies, _, _ := recv.calls()
		return len(bodies) == n
	})
	var st tasks.EndpointWithStats
	testwait.Until(t, time.Minute, "the slots released", func() bool {
		r := ts.adminDo(t, http.MethodGet, "/v1/endpoints/orders-svc", nil)
		r.JSON(t, &st)
		return st.Stats.SlotsReleased == n
	})
	if st.Stats.Slots != 0 || st.Stats.Running != 0 || st.Stats.SlotsExpired != 0 {
		t.Fatalf("endpoint stats = %+v", st.Stats)
	}
	metrics := string(do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Body)
	for _, want := range []string{
		`sluice_relay_callback_slots{endpoint="orders-svc"} 0`,
		`sluice_relay_callback_slots_total{endpoint="orders-svc",how="released"} 3`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
