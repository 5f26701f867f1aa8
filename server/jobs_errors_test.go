package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/tenant"
)

func TestBadPublishRequests(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"unknown field", `{"payload": 1, "colour": "red"}`, "colour"},
		{"no payload", `{}`, "payload"},
		{"both payloads", `{"payload": 1, "payload_base64": "AA=="}`, "payload"},
		{"bad base64", `{"payload_base64": "!!"}`, "payload_base64"},
		{"priority type", `{"payload": 1, "priority": "high"}`, "priority"},
		{"priority range", `{"payload": 1, "priority": 256}`, "priority"},
		{"negative priority", `{"payload": 1, "priority": -1}`, "priority"},
		{"priority fraction", `{"payload": 1, "priority": 1.5}`, "priority"},
		{"negative delay", `{"payload": 1, "delay": -1}`, "delay"},
		{"delay type", `{"payload": 1, "delay": "5s"}`, "delay"},
		{"huge delay", `{"payload": 1, "delay": 1e300}`, "delay"},
		{"delay and run_at", `{"payload": 1, "delay": 1, "run_at": "2030-01-01T00:00:00Z"}`, "run_at"},
		{"bad run_at", `{"payload": 1, "run_at": "tomorrow"}`, "run_at"},
		{"zero tries", `{"payload": 1, "tries": 0}`, "tries"},
		{"huge tries", `{"payload": 1, "tries": 9223372036854775807}`, "tries"},
		{"run_at year 1", `{"payload": 1, "run_at": "0001-01-01T00:00:00Z"}`, "run_at"},
		{"zero ttl", `{"payload": 1, "ttl": 0}`, "ttl"},
		{"ttl before due", `{"payload": 1, "ttl": 1, "delay": 5}`, "ttl"},
		{"zero ttr", `{"payload": 1, "ttr": 0}`, "ttr"},
		{"backoff type", `{"payload": 1, "backoff": 5}`, "backoff"},
		{"backoff unknown", `{"payload": 1, "backoff": {"factor": 2}}`, "factor"},
		{"backoff max below base", `{"payload": 1, "backoff": {"base": 5, "max": 1}}`, "backoff"},
		{"empty unique key", `{"payload": 1, "unique_key": ""}`, "unique_key"},
		{"reserved attribute", `{"payload": 1, "attributes": {"sluice.encoding": "x"}}`, "attributes"},
		{"attribute type", `{"payload": 1, "attributes": {"a": 1}}`, "attributes"},
		{"not an object", `[1, 2]`, "body"},
		{"malformed", `{"payload": `, "body"},
		{"trailing data", `{"payload": 1} {}`, "body"},
		{"empty batch", `{"jobs": []}`, "jobs"},
		{"batch and single", `{"jobs": [{"payload": 1}], "payload": 2}`, "jobs"},
		{"bad job in batch", `{"jobs": [{"payload": 1}, {"payload": 1, "priority": 999}]}`, "jobs[1].priority"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, c.body)
			wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
			if r.ErrorField() != c.field {
				t.Fatalf("field = %q, want %q (%s)", r.ErrorField(), c.field, r.Body)
			}
		})
	}
	t.Cleanup(func() {
		st, err := ts.Queue.Stats(context.Background(), "shop", "emails")
		if err != nil || st.Published != 0 || st.Ready+st.Delayed != 0 {
			t.Errorf("a bad publish changed something: %+v %v", st, err)
		}
	})
	r := ts.public(t, http.MethodPost, "/v1/ns/shop/queues/bad.name/jobs", tok, map[string]any{"payload": 1})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "queue" {
		t.Fatalf("bad queue name field = %q", r.ErrorField())
	}
}

func TestBadLeaseAndConsumeRequests(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 1})
	// An hour's lease outlasts the test however slow the machine: nothing but a bad request
	// taken for a good one could change it.
	r := ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}, "ttr": 3600})
	var got struct {
		Jobs []jobs.DeliveryJSON `json:"jobs"`
	}
	r.JSON(t, &got)
	if len(got.Jobs) != 1 {
		t.Fatalf("consume = %s", r.Body)
	}
	leased, err := ts.Queue.Get(ctxT(t), "shop", "emails", got.Jobs[0].JobID)
	if err != nil {
		t.Fatal(err)
	}
	job := qpath + "/jobs/" + got.Jobs[0].JobID
	cases := []struct {
		name, path, body, field string
	}{
		{"consume no queues", "/v1/ns/shop/consume", `{}`, "queues"},
		{"consume bad queue", "/v1/ns/shop/consume", `{"queues": ["a b"]}`, "queues"},
		{"consume twice", "/v1/ns/shop/consume", `{"queues": ["a", "a"]}`, "queues"},
		{"consume count", "/v1/ns/shop/consume", `{"queues": ["a"], "count": 0}`, "count"},
		{"consume count big", "/v1/ns/shop/consume", `{"queues": ["a"], "count": 1001}`, "count"},
		{"consume timeout", "/v1/ns/shop/consume", `{"queues": ["a"], "timeout": 3600}`, "timeout"},
		{"consume timeout type", "/v1/ns/shop/consume", `{"queues": ["a"], "timeout": true}`, "timeout"},
		{"consume ttr", "/v1/ns/shop/consume", `{"queues": ["a"], "ttr": -1}`, "ttr"},
		{"consume unknown", "/v1/ns/shop/consume", `{"queue": "a"}`, "queue"},
		{"ack no delivery", job + "/ack", `{}`, "delivery"},
		{"ack delivery type", job + "/ack", `{"delivery": "1"}`, "delivery"},
		{"ack both results", job + "/ack", `{"delivery": 1, "result": 1, "result_base64": "AA=="}`, "result"},
		{"ack bad base64", job + "/ack", `{"delivery": 1, "result_base64": "%%"}`, "result_base64"},
		{"nack no delivery", job + "/nack", `{"error": "x"}`, "delivery"},
		{"nack retry_after", job + "/nack", `{"delivery": 1, "retry_after": -5}`, "retry_after"},
		{"nack unknown", job + "/nack", `{"delivery": 1, "retry": 5}`, "retry"},
		{"touch zero ttr", job + "/touch", `{"delivery": 1, "ttr": 0}`, "ttr"},
		{"touch no delivery", job + "/touch", `{"ttr": 5}`, "delivery"},
		{"respawn nothing", qpath + "/dead/respawn", `{}`, "limit"},
		{"respawn both", qpath + "/dead/respawn", `{"limit": 1, "ids": ["x"]}`, "ids"},
		{"respawn limit", qpath + "/dead/respawn", `{"limit": 0}`, "limit"},
		{"respawn ttl", qpath + "/dead/respawn", `{"limit": 1, "ttl": -1}`, "ttl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := ts.public(t, http.MethodPost, c.path, tok, c.body)
			wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
			if r.ErrorField() != c.field {
				t.Fatalf("field = %q, want %q (%s)", r.ErrorField(), c.field, r.Body)
			}
		})
	}
	bad := []struct{ name, method, path, body, field string }{
		{"dead list limit", http.MethodGet, qpath + "/dead?limit=x", "", "limit"},
		{"dead list cursor", http.MethodGet, qpath + "/dead?cursor=zz", "", "cursor"},
		{"dead delete ttl", http.MethodDelete, qpath + "/dead", `{"limit": 1, "ttl": 1}`, "ttl"},
		{"dead delete nothing", http.MethodDelete, qpath + "/dead", ``, "limit"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var body any
			if c.body != "" {
				body = c.body
			}
			r := ts.public(t, c.method, c.path, tok, body)
			wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
			if r.ErrorField() != c.field {
				t.Fatalf("field = %q, want %q (%s)", r.ErrorField(), c.field, r.Body)
			}
		})
	}
	t.Cleanup(func() {
		j, err := ts.Queue.Get(context.Background(), "shop", "emails", got.Jobs[0].JobID)
		if err != nil || j.State != "leased" || j.Deliveries != 1 || !j.LeaseUntil.Equal(leased.LeaseUntil) {
			t.Errorf("a bad request changed the job: %+v %v; its lease was until %s", j, err, leased.LeaseUntil)
		}
	})
}

func TestAuth(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	publisher := ts.token(t, "shop", tenant.PermPublish)
	consumer := ts.token(t, "shop", tenant.PermConsume)
	other := ts.token(t, "other")
	body := map[string]any{"payload": 1}
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", "", body), http.StatusUnauthorized, "unauthenticated")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", "sk_nope", body), http.StatusUnauthorized, "unauthenticated")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", other, body), http.StatusForbidden, "permission_denied")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", consumer, body), http.StatusForbidden, "permission_denied")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/shop/consume", publisher, map[string]any{"queues": []string{"emails"}}), http.StatusForbidden, "permission_denied")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/pause", publisher, nil), http.StatusForbidden, "permission_denied")
	wantStatus(t, ts.public(t, http.MethodDelete, qpath, consumer, nil), http.StatusForbidden, "permission_denied")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", publisher, body), http.StatusCreated, "")
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/ns/shop/queues", consumer, nil), http.StatusOK, "")
	// Basic auth and lowercase scheme.
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, ts.PublicURL+"/v1/ns/shop/queues", nil)
	req.Header.Set("Authorization", "bearer "+consumer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("lowercase bearer: %d", resp.StatusCode)
	}
}

func TestBodyLimitAndMethods(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.MaxBodyBytes = 4096 })
	tok := ts.token(t, "shop")
	big := `{"payload": "` + strings.Repeat("x", 5000) + `"}`
	r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, big)
	wantStatus(t, r, http.StatusRequestEntityTooLarge, "payload_too_large")
	r = ts.public(t, http.MethodPut, qpath+"/jobs", tok, nil)
	wantStatus(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
	if r.Header.Get("Allow") == "" {
		t.Fatal("405 without Allow")
	}
	r = ts.public(t, http.MethodGet, "/v1/nothing", tok, nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
}

// TestUncleanPaths: a path Go's mux would redirect (to its cleaned form, or to add a slash) is
// answered 404 in the registry's shape (lmstfy's under /api), so a client never follows a
// redirect into another route.
func TestUncleanPaths(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/" + qpath + "/jobs"},
		{http.MethodPost, "/v1/ns/shop//queues/emails/jobs"},
		{http.MethodGet, "/v1/ns/shop/./queues"},
		{http.MethodGet, "/v1/ns/shop/queues/emails/../emails"},
	} {
		r := ts.public(t, c.method, c.path, tok, map[string]any{"payload": 1})
		wantStatus(t, r, http.StatusNotFound, "not_found")
		if loc := r.Header.Get("Location"); loc != "" {
			t.Fatalf("%s %s: Location %q on a 404", c.method, c.path, loc)
		}
	}
	wantStatus(t, ts.public(t, http.MethodPut, "/v1/ns/shop/queues/emails/jobs", tok, nil), http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, c := range []struct{ in, want string }{
		{"abc-123", "abc-123"},
		{"bad id\nwith newline", ""},
		{strings.Repeat("a", 200), ""},
	} {
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, ts.PublicURL+"/healthz", nil)
		req.Header.Set("X-Request-Id", strings.ReplaceAll(c.in, "\n", " "))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("X-Request-Id")
		if c.want != "" && got != c.want || c.want == "" && (got == "" || got == c.in) {
			t.Fatalf("X-Request-Id for %q = %q", c.in, got)
		}
	}
}
