package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server/tasks"
	"github.com/sluicehq/sluice/server/tenant"
)

// delegateToken is a token of ns that may name who its tasks are for (tasks:delegate).
func (ts *testServer) delegateToken(t *testing.T, ns string) string {
	t.Helper()
	return ts.token(t, ns, tenant.PermTasks, tenant.PermTasksDelegate)
}

// queued is the number of tasks waiting at an endpoint, from the admin API.
func (ts *testServer) queued(t *testing.T, endpoint string) int64 {
	t.Helper()
	var e tasks.EndpointWithStats
	r := ts.adminDo(t, http.MethodGet, "/v1/endpoints/"+endpoint, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &e)
	return e.Stats.Queued
}

// trySubmit submits one task and returns the answer's status.
func (ts *testServer) trySubmit(t *testing.T, token string, body map[string]any) int {
	t.Helper()
	return ts.public(t, http.MethodPost, "/v1/tasks", token, body).Status
}

// The fairness subject comes from the token: an ordinary token's tasks share one
// max_queued_per_subject share whatever subject the body names (rotated or left out); a delegate
// token's subjects each have their own share, scoped under the token, and its tasks without a
// subject share the token's.
func TestTaskSubjectComesFromTheToken(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "slow", map[string]any{"target_url": "http://127.0.0.1:9/x", "max_queued_per_subject": 3})
	ordinary, other := ts.taskToken(t, "shop", -1), ts.taskToken(t, "shop", -1)

	for i, subject := range []string{"flood-0", "", "flood-2"} {
		body := map[string]any{"endpoint": "slow"}
		if subject != "" {
			body["subject"] = subject
		}
		if st := ts.trySubmit(t, ordinary, body); st != http.StatusCreated {
			t.Fatalf("task %d of the ordinary token: %d", i, st)
		}
	}
	for i := range 20 {
		r := ts.public(t, http.MethodPost, "/v1/tasks", ordinary, map[string]any{"endpoint": "slow", "subject": fmt.Sprintf("flood-%d", 3+i)})
		wantStatus(t, r, http.StatusConflict, "queue_full")
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks", ordinary, map[string]any{"endpoint": "slow"}), http.StatusConflict, "queue_full")
	if st := ts.trySubmit(t, other, map[string]any{"endpoint": "slow", "subject": "flood-0"}); st != http.StatusCreated {
		t.Fatalf("another token's task was refused (%d): a subject named in the body is not shared across tokens", st)
	}

	d1, d2 := ts.delegateToken(t, "shop"), ts.delegateToken(t, "shop")
	for _, c := range []struct {
		token, subject string
		n              int
	}{{d1, "alice", 3}, {d1, "bob", 3}, {d1, "", 3}, {d2, "alice", 3}} {
		body := map[string]any{"endpoint": "slow"}
		if c.subject != "" {
			body["subject"] = c.subject
		}
		for i := range c.n {
			if st := ts.trySubmit(t, c.token, body); st != http.StatusCreated {
				t.Fatalf("delegate subject %q, task %d: %d", c.subject, i, st)
			}
		}
		wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks", c.token, body), http.StatusConflict, "queue_full")
	}
	if n := ts.queued(t, "slow"); n != 3+1+4*3 {
		t.Fatalf("%d tasks queued, want 16", n)
	}
}

// A token without max_priority submits at the server's default cap: 0 unless configured. Its
// priority 255 is lowered (the answer says so) and the task runs behind earlier ones; a token's
// own max_priority still raises it.
func TestTaskPriorityCappedByDefault(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "slow", map[string]any{"target_url": "http://127.0.0.1:9/x"})
	plain, trusted := ts.taskToken(t, "shop", -1), ts.taskToken(t, "shop", 255)
	ts.submit(t, plain, map[string]any{"endpoint": "slow"})
	loud := ts.submit(t, plain, map[string]any{"endpoint": "slow", "priority": 255})
	if loud.Priority != 0 || loud.WaitNum != 1 {
		t.Fatalf("priority 255 from a default token: priority %d, %d ahead; want 0 and behind the first task", loud.Priority, loud.WaitNum)
	}
	if got := ts.task(t, plain, loud.TaskID, ""); got.Priority != 0 || got.WaitNum != 1 {
		t.Fatalf("the task reads priority %d, %d ahead", got.Priority, got.WaitNum)
	}
	if got := ts.submit(t, trusted, map[string]any{"endpoint": "slow", "priority": 255}); got.Priority != 255 || got.WaitNum != 0 {
		t.Fatalf("a token with max_priority 255: priority %d, %d ahead", got.Priority, got.WaitNum)
	}

	configured := relayServer(t, noDispatch, func(c *Config) { c.RelayDefaultMaxPriority = 7 })
	configured.putEndpoint(t, "slow", map[string]any{"target_url": "http://127.0.0.1:9/x"})
	if got := configured.submit(t, configured.taskToken(t, "shop", -1), map[string]any{"endpoint": "slow", "priority": 255}); got.Priority != 7 {
		t.Fatalf("with relay_default_max_priority 7: priority %d", got.Priority)
	}
}

// A subject too long or holding a control character, or not a string, is refused with 400
// naming the field, and queues nothing (a batch with one such task queues none of it).
func TestTaskBadSubjectChangesNothing(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "slow", map[string]any{"target_url": "http://127.0.0.1:9/x"})
	for _, tok := range []string{ts.taskToken(t, "shop", -1), ts.delegateToken(t, "shop")} {
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"endpoint": "slow", "subject": strings.Repeat("u", tasks.MaxSubject+1)}, "subject"},
			{map[string]any{"endpoint": "slow", "subject": strings.Repeat("u", 64<<10)}, "subject"},
			{map[string]any{"endpoint": "slow", "subject": "alice\nbob"}, "subject"},
			{map[string]any{"endpoint": "slow", "subject": "alice\x00"}, "subject"},
			{map[string]any{"endpoint": "slow", "subject": 42}, ""},
			{map[string]any{"tasks": []map[string]any{{"endpoint": "slow"}, {"endpoint": "slow", "subject": "a\tb"}}}, "tasks[1].subject"},
		} {
			r := ts.public(t, http.MethodPost, "/v1/tasks", tok, c.body)
			wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
			if c.field != "" && r.ErrorField() != c.field {
				t.Fatalf("field %q, want %q: %s", r.ErrorField(), c.field, r.Body)
			}
		}
	}
	if n := ts.queued(t, "slow"); n != 0 {
		t.Fatalf("%d tasks queued by refused submits", n)
	}
	if st := ts.trySubmit(t, ts.delegateToken(t, "shop"), map[string]any{"endpoint": "slow", "subject": strings.Repeat("é", tasks.MaxSubject/2)}); st != http.StatusCreated {
		t.Fatalf("a subject of %d bytes was refused: %d", tasks.MaxSubject, st)
	}
}

// On a fair_share endpoint, one ordinary token floods 1,000 tasks (naming a new subject in each,
// which changes nothing); a delegate token's two subjects and another ordinary token each queue
// one task after it. Each of those is at most one task per other active subject from the front,
// and starts within that many calls once dispatch begins.
func TestTaskFairShareThroughHTTP(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		order = append(order, string(b))
		mu.Unlock()
	}))
	defer target.Close()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "fair", map[string]any{"target_url": target.URL, "concurrency": 1, "fair_share": true})
	var e tasks.EndpointJSON
	r := ts.adminDo(t, http.MethodGet, "/v1/endpoints/fair", nil)
	r.JSON(t, &e)
	if !e.FairShare {
		t.Fatalf("the endpoint reads back without fair_share: %s", r.Body)
	}
	flooder, late, delegate := ts.taskToken(t, "shop", -1), ts.taskToken(t, "shop", -1), ts.delegateToken(t, "shop")
	batch := make([]map[string]any, 1000)
	for i := range batch {
		batch[i] = map[string]any{"endpoint": "fair", "subject": fmt.Sprintf("flood-%d", i), "body": "flood"}
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks", flooder, map[string]any{"tasks": batch}), http.StatusCreated, "")
	var ids []string
	for i, c := range []struct {
		token, subject string
	}{{delegate, "alice"}, {delegate, "bob"}, {late, ""}} {
		body := map[string]any{"endpoint": "fair", "body": "next-" + c.subject}
		if c.subject != "" {
			body["subject"] = c.subject
		}
		got := ts.submit(t, c.token, body)
		if got.WaitNum > int64(i+1) {
			t.Fatalf("task of %q has %d ahead, want at most %d (one per other active subject)", c.subject, got.WaitNum, i+1)
		}
		ids = append(ids, got.TaskID)
	}
	if n := ts.queued(t, "fair"); n != 1003 {
		t.Fatalf("%d queued, want 1003", n)
	}

	// Dispatch starts: an instance with a dispatcher on the same Redis.
	newTestServerOn(t, ts.env, func(c *Config) { c.RelayAllowPrivate = true })
	for _, id := range ids {
		testwait.Until(t, 30*time.Second, "task "+id+" to complete", func() bool {
			return ts.task(t, delegate, id, "?wait=5s").TaskStatus == "completed"
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for _, body := range []string{"next-alice", "next-bob", "next-"} {
		if i := slices.Index(order, body); i < 0 || i > 3 {
			t.Fatalf("%s was call %d, want one of the first 4: %v", body, i+1, order[:min(len(order), 6)])
		}
	}
}
