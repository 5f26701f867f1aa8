package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server/callbacks"
	"github.com/sluicehq/sluice/server/tasks"
)

// allowCallbacks gives namespace shop a callback secret (returned), lets its callbacks go under
// prefix, and to private addresses (the test's receivers are on loopback).
func (ts *testServer) allowCallbacks(t *testing.T, prefix string) string {
	t.Helper()
	r := ts.adminDo(t, http.MethodPost, cbpath+"/secrets", nil)
	wantStatus(t, r, http.StatusCreated, "")
	var set callbacks.SettingsJSON
	r.JSON(t, &set)
	wantStatus(t, ts.adminDo(t, http.MethodPost, cbpath+"/destinations", map[string]any{"prefix": prefix}), http.StatusOK, "")
	wantStatus(t, ts.adminDo(t, http.MethodPut, cbpath+"/allow_private", map[string]any{"allow_private": true}), http.StatusOK, "")
	return set.Secrets[0]
}

func TestTaskCompletionCallbackOverHTTP(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "rendered")
	}))
	defer target.Close()
	ts := relayServer(t)
	tok := ts.taskToken(t, "shop", -1)
	recv := newHookReceiver(t)
	secret := ts.allowCallbacks(t, recv.URL+"/hooks")
	recv.mu.Lock()
	recv.secret = secret
	recv.mu.Unlock()
	ts.putEndpoint(t, "gen", map[string]any{"target_url": target.URL})

	sub := ts.submit(t, tok, map[string]any{"endpoint": "gen", "body": "draw",
		"callback": map[string]any{"url": recv.URL + "/hooks/done", "headers": map[string]string{"X-Order": "42"}, "timeout": 5}})
	var bodies []string
	testwait.Until(t, 30*time.Second, "the completion callback", func() bool {
		bodies, _, _ = recv.calls()
		return len(bodies) > 0
	})
	if _, _, bad := recv.calls(); len(bodies) != 1 || bad != 0 {
		t.Fatalf("receiver got %d verified calls and %d that did not verify, want 1 and 0", len(bodies), bad)
	}
	var got tasks.TaskResponse
	if err := json.Unmarshal([]byte(bodies[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.TaskID != sub.TaskID || got.TaskStatus != "completed" || got.HTTPStatus != 200 || got.TaskResult == nil ||
		*got.TaskResult != "rendered" || got.Callback == nil || got.Callback.URL != recv.URL+"/hooks/done" {
		t.Fatalf("callback body %s", bodies[0])
	}
	// The task shows its callback.
	if shown := ts.task(t, tok, sub.TaskID, ""); shown.Callback == nil || shown.Callback.Timeout != 5 || shown.Callback.Headers["X-Order"] != "42" {
		t.Fatalf("task shows callback %+v", shown.Callback)
	}
}

// A callback outside the namespace's destinations is 400 naming the field, in a single submit and
// in a batch (which then queues none of its tasks); a method cannot be chosen (always POST).
func TestTaskCompletionCallbackRefusedOverHTTP(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	tok := ts.taskToken(t, "shop", -1)
	ts.allowCallbacks(t, "https://hooks.example.com/in")
	ts.putEndpoint(t, "gen", map[string]any{"target_url": "http://127.0.0.1:9/api"})
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"endpoint": "gen", "callback": map[string]any{"url": "https://hooks.example.com/other"}}, "callback.url"},
		{map[string]any{"endpoint": "gen", "callback": map[string]any{"url": "http://127.0.0.1:7778/v1/namespaces"}}, "callback.url"},
		{map[string]any{"endpoint": "gen", "callback": map[string]any{"url": "https://hooks.example.com/in", "timeout": 0}}, "callback.timeout"},
		{map[string]any{"endpoint": "gen", "callback": map[string]any{"url": "https://hooks.example.com/in", "timeout": 3600}}, "callback.timeout"},
		{map[string]any{"endpoint": "gen", "callback": map[string]any{"url": strings.Repeat("x", 3000)}}, "callback.url"},
		{map[string]any{"tasks": []any{
			map[string]any{"endpoint": "gen", "callback": map[string]any{"url": "https://hooks.example.com/in"}},
			map[string]any{"endpoint": "gen", "callback": map[string]any{"url": "https://evil.example/in"}},
		}}, "tasks[1].callback.url"},
		{map[string]any{"endpoint": "gen", "callback": map[string]any{"url": "https://hooks.example.com/in", "method": "DELETE"}}, ""},
	} {
		r := ts.public(t, http.MethodPost, "/v1/tasks", tok, c.body)
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if c.field != "" && r.ErrorField() != c.field {
			t.Fatalf("%v: field %q, want %s (%s)", c.body, r.ErrorField(), c.field, r.Body)
		}
	}
	if n := ts.queuedAt(t, "gen"); n != 0 {
		t.Fatalf("%d tasks queued by refused submits", n)
	}
}

// A namespace that may reach private addresses, and whose destinations cover the admin listener,
// still cannot drive the admin API with a callback: the listener refuses every request that
// carries webhook-id, so the callback job dies with a 403 and nothing changes.
func TestTaskCompletionCallbackCannotDriveTheAdminAPI(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, func(c *Config) { c.AdminToken = "" })
	tok := ts.taskToken(t, "shop", -1)
	ts.allowCallbacks(t, ts.AdminURL)
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer target.Close()
	ts.putEndpoint(t, "gen", map[string]any{"target_url": target.URL})
	before, err := ts.Tokens.List(ctxT(t), "shop")
	if err != nil {
		t.Fatal(err)
	}

	ts.submit(t, tok, map[string]any{"endpoint": "gen", "callback": map[string]any{"url": ts.AdminURL + "/v1/namespaces/shop/tokens"}})
	testwait.Until(t, 30*time.Second, "the callback job in the dead letter", func() bool {
		n, err := ts.Queue.DeadSize(ctxT(t), "shop", "task-callbacks")
		return err == nil && n == 1
	})
	job, err := ts.Queue.DeadPeek(ctxT(t), "shop", "task-callbacks")
	if err != nil || job == nil {
		t.Fatalf("dead callback job: %v", err)
	}
	if !strings.Contains(job.LastError, "HTTP 403") || !strings.Contains(job.LastError, "admin_callback_refused") {
		t.Fatalf("the callback job died with %q, want the admin listener's 403 admin_callback_refused", job.LastError)
	}
	after, err := ts.Tokens.List(ctxT(t), "shop")
	if err != nil || len(after) != len(before) {
		t.Fatalf("tokens of shop: %d before, %d after (%v)", len(before), len(after), err)
	}
}
