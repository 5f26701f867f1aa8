package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/server/tasks"
)

// An endpoint the dispatcher could never call (loopback or private while relay_allow_private is
// off) is refused when it is set, with a message naming the setting that allows it, and nothing
// is stored; with the setting on it is accepted.
func TestEndpointPrivateTargetRefusedNamingTheSetting(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, noDispatch)
	ts.putEndpoint(t, "public", map[string]any{"target_url": "https://93.184.216.34/api", "max_queued": 5})
	for _, target := range []string{"http://127.0.0.1:9/x", "http://localhost:8080/", "http://[::1]:9/", "http://10.1.2.3/api",
		"http://169.254.169.254/latest/meta-data"} {
		for _, name := range []string{"private", "public"} {
			r := ts.adminDo(t, http.MethodPut, "/v1/endpoints/"+name, map[string]any{"target_url": target})
			wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
			if r.ErrorField() != "target_url" || !strings.Contains(string(r.Body), "relay_allow_private") {
				t.Fatalf("PUT %s at %s: %s; want the field target_url and the setting named", name, target, r.Body)
			}
		}
	}
	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/endpoints/private", nil), http.StatusNotFound, "not_found")
	var kept tasks.EndpointWithStats
	ts.adminDo(t, http.MethodGet, "/v1/endpoints/public", nil).JSON(t, &kept)
	if kept.TargetURL != "https://93.184.216.34/api" || kept.MaxQueued != 5 {
		t.Fatalf("the refused PUTs changed the endpoint: %+v", kept)
	}

	allowed := relayServer(t, noDispatch)
	allowed.putEndpoint(t, "private", map[string]any{"target_url": "http://127.0.0.1:9/x"})

	// The config file's endpoints are held to the same rule at start.
	cfg := Config{RedisURL: ts.env.URL, Prefix: ts.env.Prefix + "-start", AdminToken: testAdminToken, RelayWorkers: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Out: io.Discard,
		RelayEndpoints: map[string]tasks.EndpointBody{"local": {TargetURL: "http://127.0.0.1:9/x"}}}
	if _, err := New(ctxT(t), cfg); err == nil || !strings.Contains(err.Error(), "relay_allow_private") {
		t.Fatalf("New with a loopback endpoint in relay_endpoints: %v; want an error naming relay_allow_private", err)
	}
}

// A task's JSON body (an object, an array, a number) reaches the target as JSON and says so with
// Content-Type: application/json, unless the task's headers name another type; a string body is
// sent as its text, typed only by the task's headers.
func TestTaskJSONBodyIsTypedAsJSON(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]string{} // body -> Content-Type
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[string(b)] = r.Header.Get("Content-Type")
		mu.Unlock()
	}))
	defer target.Close()
	ts := relayServer(t)
	ts.putEndpoint(t, "gen", map[string]any{"target_url": target.URL, "concurrency": 4})
	tok := ts.taskToken(t, "shop", -1)
	cases := []struct {
		task        map[string]any
		body, ctype string
	}{
		{map[string]any{"body": map[string]any{"prompt": "a lighthouse"}}, `{"prompt":"a lighthouse"}`, "application/json"},
		{map[string]any{"body": []int{1, 2}}, `[1,2]`, "application/json"},
		{map[string]any{"body": 42}, `42`, "application/json"},
		{map[string]any{"body": map[string]any{"v": 1}, "headers": map[string]string{"content-type": "application/vnd.api+json"}},
			`{"v":1}`, "application/vnd.api+json"},
		{map[string]any{"body": "plain words"}, `plain words`, ""},
		{map[string]any{"body": "<p>hi</p>", "headers": map[string]string{"Content-Type": "text/html"}}, `<p>hi</p>`, "text/html"},
	}
	for _, c := range cases {
		c.task["endpoint"] = "gen"
		id := ts.submit(t, tok, c.task).TaskID
		if st := ts.task(t, tok, id, "?wait=20s"); st.TaskStatus != "completed" {
			t.Fatalf("task %v: %+v", c.task, st)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range cases {
		if ct, ok := got[c.body]; !ok || ct != c.ctype {
			t.Errorf("body %s reached the target with Content-Type %q (arrived: %v); want %q", c.body, ct, ok, c.ctype)
		}
	}
}

// Malformed and out-of-range endpoint settings are refused with a 400 naming the field, and
// change nothing.
func TestEndpointBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "e", map[string]any{"target_url": "http://127.0.0.1:9/x", "qps": 5, "max_queued": 7})
	before := ts.adminDo(t, http.MethodGet, "/v1/endpoints/e", nil)
	cases := []struct {
		name, body, field string
	}{
		{strings.Repeat("n", 65), `{"target_url": "http://127.0.0.1:9/x"}`, "name"},
		{"a.b", `{"target_url": "http://127.0.0.1:9/x"}`, "name"},
		{"e", `{"target_url": "http://127.0.0.1:9/x", "qps": 1e300}`, "qps"},
		{"e", `{"target_url": "http://127.0.0.1:9/x", "concurrency": 10000000000}`, "concurrency"},
		{"e", `{"target_url": "http://127.0.0.1:9/x", "concurrency": 99999999999999999999999}`, ""},
		{"e", `{"target_url": "http://127.0.0.1:9/x", "timeout": 1e300}`, "timeout"},
		{"e", `{"target_url": "http://127.0.0.1:9/x", "max_queued": -1}`, "max_queued"},
		{"e", `{"target_url": "http://127.0.0.1:9/x", "tries": 1000000}`, "tries"},
		{"e", `{"target_url": "http://127.0.0.1:9/` + strings.Repeat("x", 5000) + `?q"}`, "target_url"},
		{"e", `{"target_url": "ftp://127.0.0.1/"}`, "target_url"},
		{"e", `{"target_url": "http://127.0.0.1:9/x", "qps": "fast"}`, ""},
		{"e", `{"target_url": "http://127.0.0.1:9/x", "unknown": 1}`, ""},
		{"e", `[1, 2]`, ""},
		{"e", `{"target_url": `, ""},
	}
	for _, c := range cases {
		r := ts.adminDo(t, http.MethodPut, "/v1/endpoints/"+c.name, c.body)
		if r.Status != http.StatusBadRequest || r.ErrorCode() != "invalid_argument" {
			t.Errorf("PUT %.40s %.80s: %d %s; want 400 invalid_argument", c.name, c.body, r.Status, r.Body)
			continue
		}
		if c.field != "" && r.ErrorField() != c.field {
			t.Errorf("PUT %.40s %.80s: field %q, want %q", c.name, c.body, r.ErrorField(), c.field)
		}
	}
	after := ts.adminDo(t, http.MethodGet, "/v1/endpoints/e", nil)
	if string(after.Body) != string(before.Body) {
		t.Fatalf("bad PUTs changed the endpoint:\n%s\n%s", before.Body, after.Body)
	}
	var list struct{ Endpoints []tasks.EndpointWithStats }
	ts.adminDo(t, http.MethodGet, "/v1/endpoints", nil).JSON(t, &list)
	if len(list.Endpoints) != 1 {
		t.Fatalf("bad PUTs created endpoints: %+v", list.Endpoints)
	}
}
