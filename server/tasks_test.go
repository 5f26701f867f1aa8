package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/mysqltest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/tasks"
	"github.com/sluicehq/sluice/server/tenant"
)

// relayServer is a test server whose relay may call loopback targets.
func relayServer(t *testing.T, opts ...func(*Config)) *testServer {
	t.Helper()
	return newTestServer(t, append([]func(*Config){func(c *Config) { c.RelayAllowPrivate = true }}, opts...)...)
}

// noDispatch keeps tasks pending: the instance runs no dispatcher.
func noDispatch(c *Config) { c.RelayWorkers = -1 }

// putEndpoint creates an endpoint through the admin API.
func (ts *testServer) putEndpoint(t *testing.T, name string, body map[string]any) {
	t.Helper()
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/endpoints/"+name, body), http.StatusOK, "")
}

// taskToken is a token of ns with the tasks permission (and maxPriority, -1: no cap).
func (ts *testServer) taskToken(t *testing.T, ns string, maxPriority int) string {
	t.Helper()
	p := tenant.CreateTokenParams{Namespace: ns, Permissions: []tenant.Permission{tenant.PermTasks}}
	if maxPriority >= 0 {
		p.MaxPriority = &maxPriority
	}
	secret, _, err := ts.Tokens.Create(ctxT(t), p)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

func (ts *testServer) submit(t *testing.T, token string, body map[string]any) tasks.SubmitResponse {
	t.Helper()
	r := ts.public(t, http.MethodPost, "/v1/tasks", token, body)
	wantStatus(t, r, http.StatusCreated, "")
	var res tasks.SubmitResponse
	r.JSON(t, &res)
	return res
}

func (ts *testServer) task(t *testing.T, token, id, query string) tasks.TaskResponse {
	t.Helper()
	r := ts.public(t, http.MethodGet, "/v1/tasks/"+id+query, token, nil)
	wantStatus(t, r, http.StatusOK, "")
	var res tasks.TaskResponse
	r.JSON(t, &res)
	return res
}

// doHeader sends a request with extra headers.
func doHeader(t *testing.T, method, url string, h map[string]string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func TestTaskOfflineEndToEnd(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%s %s?%s %s %s", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Job"), b)
	}))
	defer target.Close()
	ts := relayServer(t)
	ts.putEndpoint(t, "gen", map[string]any{"target_url": target.URL + "/api", "qps": 100, "concurrency": 2})
	tok := ts.taskToken(t, "shop", -1)

	sub := ts.submit(t, tok, map[string]any{
		"target_url": target.URL + "/api/render", "http_method": "PUT", "headers": map[string]string{"X-Job": "7"},
		"query_params": map[string]string{"size": "4"}, "body": "hello", "task_type": "offline",
	})
	if sub.TaskID == "" || sub.Endpoint != "gen" || sub.CreatedAt.IsZero() {
		t.Fatalf("submit answered %+v", sub)
	}
	got := ts.task(t, tok, sub.TaskID, "?wait=20s")
	if got.TaskStatus != "completed" || got.HTTPStatus != 200 || got.Tries != 1 || got.StartedAt == nil || got.EndedAt == nil {
		t.Fatalf("task after wait: %+v", got)
	}
	if got.TaskResult == nil || *got.TaskResult != "PUT /api/render?size=4 7 hello" {
		t.Fatalf("task_result = %v", got.TaskResult)
	}

	// The exact field names of the API.
	r := ts.public(t, http.MethodGet, "/v1/tasks/"+sub.TaskID, tok, nil)
	for _, f := range []string{`"task_id"`, `"task_status"`, `"task_result"`, `"http_status"`, `"wait_num"`, `"wait_time"`,
		`"created_at"`, `"started_at"`, `"ended_at"`, `"tries"`} {
		if !strings.Contains(string(r.Body), f) {
			t.Errorf("GET body lacks %s: %s", f, r.Body)
		}
	}
}

func TestTaskErrors(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "slow", map[string]any{"target_url": "http://127.0.0.1:9/x", "max_queued": 1})
	tok := ts.taskToken(t, "shop", -1)

	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks", "", map[string]any{"endpoint": "slow"}), http.StatusUnauthorized, "unauthenticated")
	jobsOnly := ts.token(t, "shop", tenant.PermPublish)
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks", jobsOnly, map[string]any{"endpoint": "slow"}), http.StatusForbidden, "permission_denied")

	r := ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "nope"})
	wantStatus(t, r, http.StatusNotFound, "not_found")
	r = ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "slow", "task_type": "later"})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "task_type" {
		t.Fatalf("field %q", r.ErrorField())
	}
	r = ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "slow", "http_method": "BREW"})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "http_method" {
		t.Fatalf("field %q: %s", r.ErrorField(), r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"target_url": "http://evil.example/"})
	wantStatus(t, r, http.StatusNotFound, "not_found") // no open relay
	r = ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "slow", "priority": 300})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")

	ts.submit(t, tok, map[string]any{"endpoint": "slow"})
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "slow"}), http.StatusConflict, "queue_full")
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/tasks/slow-nothing", tok, nil), http.StatusNotFound, "not_found")
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/tasks/x?wait=soon", tok, nil), http.StatusBadRequest, "invalid_argument")
}

func TestTaskNamespacesAndCancel(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "slow", map[string]any{"target_url": "http://127.0.0.1:9/x"})
	shop, other := ts.taskToken(t, "shop", -1), ts.taskToken(t, "other", -1)
	a := ts.submit(t, shop, map[string]any{"endpoint": "slow"})
	b := ts.submit(t, shop, map[string]any{"endpoint": "slow"})
	if a.WaitNum != 0 || b.WaitNum != 1 {
		t.Fatalf("wait_num %d, %d", a.WaitNum, b.WaitNum)
	}
	if got := ts.task(t, shop, b.TaskID, ""); got.TaskStatus != "pending" || got.WaitNum != 1 {
		t.Fatalf("b: %+v", got)
	}
	// Another namespace sees nothing and cancels nothing.
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/tasks/"+a.TaskID, other, nil), http.StatusNotFound, "not_found")
	wantStatus(t, ts.public(t, http.MethodDelete, "/v1/tasks/"+a.TaskID, other, nil), http.StatusNotFound, "not_found")

	var c tasks.CancelResponse
	r := ts.public(t, http.MethodDelete, "/v1/tasks/"+a.TaskID, shop, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &c)
	if c.TaskStatus != "cancelled" || !c.Cancelled {
		t.Fatalf("cancel: %+v", c)
	}
	r = ts.public(t, http.MethodPost, "/v1/tasks/"+b.TaskID+"/cancel", shop, nil)
	wantStatus(t, r, http.StatusOK, "")
	if got := ts.task(t, shop, a.TaskID, "?wait=5s"); got.TaskStatus != "cancelled" {
		t.Fatalf("a after cancel: %+v", got)
	}
}

func TestTaskPriorityCannotBeForged(t *testing.T) {
	t.Parallel()
	grantKey := strings.Repeat("g", 32)
	ts := relayServer(t, noDispatch, func(c *Config) { c.RelayGrantKeys = []string{grantKey} })
	ts.putEndpoint(t, "slow", map[string]any{"target_url": "http://127.0.0.1:9/x"})
	capped := ts.taskToken(t, "shop", 2)
	if got := ts.submit(t, capped, map[string]any{"endpoint": "slow", "priority": 9}); got.Priority != 2 {
		t.Fatalf("priority %d, want the token's cap 2", got.Priority)
	}
	forged := relay.SignGrant([]byte(strings.Repeat("x", 32)), "u1", 9, time.Now().Add(time.Minute))
	if got := ts.submit(t, capped, map[string]any{"endpoint": "slow", "priority": 9, "subject": "u1", "priority_grant": forged}); got.Priority != 2 {
		t.Fatalf("forged grant gave priority %d", got.Priority)
	}
	grant := relay.SignGrant([]byte(grantKey), "u1", 9, time.Now().Add(time.Minute))
	r := ts.public(t, http.MethodPost, "/v1/tasks", capped, map[string]any{"endpoint": "slow", "priority": 9, "subject": "u1"})
	wantStatus(t, r, http.StatusCreated, "")
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, ts.PublicURL+"/v1/tasks",
		strings.NewReader(`{"endpoint":"slow","priority":9,"subject":"u1"}`))
	req.Header.Set("Authorization", "Bearer "+capped)
	req.Header.Set(tasks.GrantHeader, grant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"priority":9`) {
		t.Fatalf("granted submit: %d %s", resp.StatusCode, body)
	}
	// The granted task is ahead of the three others.
	if !strings.Contains(string(body), `"wait_num":0`) {
		t.Fatalf("granted task is not first: %s", body)
	}
}

func TestTaskOnlinePermits(t *testing.T) {
	t.Parallel()
	ts := relayServer(t)
	ts.putEndpoint(t, "live", map[string]any{"target_url": "http://127.0.0.1:9/x", "concurrency": 1})
	tok := ts.taskToken(t, "shop", -1)
	a := ts.submit(t, tok, map[string]any{"endpoint": "live", "task_type": "online"})
	b := ts.submit(t, tok, map[string]any{"endpoint": "live", "task_type": "online"})
	got := ts.task(t, tok, a.TaskID, "?wait=20s")
	if got.TaskStatus != "permitted" || got.Permit == "" || got.PermitExpiresAt == nil {
		t.Fatalf("a: %+v", got)
	}
	check := ts.PublicURL + "/v1/permits/check?endpoint=live"
	wantStatus(t, doHeader(t, http.MethodGet, check, nil), http.StatusUnauthorized, "unauthenticated")
	wantStatus(t, doHeader(t, http.MethodGet, check, map[string]string{relay.PermitHeader: got.Permit + "x"}), http.StatusForbidden, "permit_refused")
	r := doHeader(t, http.MethodGet, check, map[string]string{relay.PermitHeader: got.Permit})
	wantStatus(t, r, http.StatusOK, "")
	if r.Header.Get("Sluice-Task-Id") != a.TaskID {
		t.Fatalf("check headers %v", r.Header)
	}
	wantStatus(t, doHeader(t, http.MethodGet, check, map[string]string{relay.PermitHeader: got.Permit}), http.StatusForbidden, "permit_refused")
	// b waits: the only slot is a's until done.
	if st := ts.task(t, tok, b.TaskID, ""); st.TaskStatus != "pending" {
		t.Fatalf("b before done: %+v", st)
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks/"+a.TaskID+"/done", tok, map[string]any{}), http.StatusBadRequest, "invalid_argument")
	r = ts.public(t, http.MethodPost, "/v1/tasks/"+a.TaskID+"/done", tok, map[string]any{"permit": got.Permit, "http_status": 200})
	wantStatus(t, r, http.StatusOK, "")
	if st := ts.task(t, tok, a.TaskID, ""); st.TaskStatus != "completed" || st.HTTPStatus != 200 {
		t.Fatalf("a after done: %+v", st)
	}
	if st := ts.task(t, tok, b.TaskID, "?wait=20s"); st.TaskStatus != "permitted" {
		t.Fatalf("b after a's done: %+v", st)
	}
}

func TestEndpointsAdmin(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch, func(c *Config) {
		c.RelayEndpoints = map[string]tasks.EndpointBody{"fromconfig": {TargetURL: "http://127.0.0.1:9/c"}}
	})
	r := ts.adminDo(t, http.MethodPut, "/v1/endpoints/gen", map[string]any{"target_url": "http://127.0.0.1:9/x", "qps": -1})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "qps" {
		t.Fatalf("field %q", r.ErrorField())
	}
	ts.putEndpoint(t, "gen", map[string]any{"target_url": "http://127.0.0.1:9/x", "qps": 5, "concurrency": 3, "timeout": 2.5,
		"queue_timeout": 60, "max_queued": 50, "tries": 4, "avg_duration": 2, "max_queued_per_subject": 5})
	tok := ts.taskToken(t, "shop", -1)
	for range 3 {
		ts.submit(t, tok, map[string]any{"endpoint": "gen"})
	}
	var one tasks.EndpointWithStats
	r = ts.adminDo(t, http.MethodGet, "/v1/endpoints/gen", nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &one)
	if one.QPS != 5 || one.Concurrency != 3 || one.Timeout != 2.5 || one.MaxQueuedPerSubject != 5 || one.Stats.Queued != 3 {
		t.Fatalf("endpoint: %+v", one)
	}
	if len(one.Stats.ETA) == 0 || one.Stats.ETA[len(one.Stats.ETA)-1].WaitTime == nil {
		t.Fatalf("no ETA from avg_duration: %+v", one.Stats.ETA)
	}
	var list struct{ Endpoints []tasks.EndpointWithStats }
	r = ts.adminDo(t, http.MethodGet, "/v1/endpoints", nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &list)
	if len(list.Endpoints) != 2 || list.Endpoints[0].Name != "fromconfig" || list.Endpoints[1].Name != "gen" {
		t.Fatalf("list: %+v", list)
	}
	wantStatus(t, ts.adminDo(t, http.MethodDelete, "/v1/endpoints/gen", nil), http.StatusNoContent, "")
	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/endpoints/gen", nil), http.StatusNotFound, "not_found")
	// The public listener has no endpoint routes.
	if r := ts.public(t, http.MethodGet, "/v1/endpoints", tok, nil); r.Status == http.StatusOK {
		t.Fatal("endpoints are served on the public listener")
	}
}

// Two instances share the endpoint's limits: the concurrency never goes over, whichever
// instance's dispatcher makes the call.
func TestTaskTwoInstancesShareConcurrency(t *testing.T) {
	t.Parallel()
	var inflight, peak atomic.Int64
	var mu sync.Mutex
	release := make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		mu.Lock()
		peak.Store(max(peak.Load(), n))
		mu.Unlock()
		<-release
	}))
	defer target.Close()
	defer close(release)
	a := relayServer(t)
	// Set before b starts: a change reaches other instances within the refresh interval.
	a.putEndpoint(t, "gen", map[string]any{"target_url": target.URL, "concurrency": 2})
	b := newTestServerOn(t, a.env, func(c *Config) { c.RelayAllowPrivate = true })
	tok := a.taskToken(t, "shop", -1)
	ids := make([]string, 8)
	for i := range ids {
		ts := a
		if i%2 == 1 {
			ts = b
		}
		ids[i] = ts.submit(t, tok, map[string]any{"endpoint": "gen"}).TaskID
	}
	testwait.Until(t, time.Minute, "two calls in flight", func() bool { return inflight.Load() == 2 })
	var st tasks.EndpointWithStats
	r := b.adminDo(t, http.MethodGet, "/v1/endpoints/gen", nil)
	r.JSON(t, &st)
	if st.Stats.Running != 2 || st.Stats.Queued != 6 {
		t.Fatalf("stats: %+v", st.Stats)
	}
	for range 6 {
		release <- struct{}{}
	}
	testwait.Until(t, time.Minute, "the last two calls in flight", func() bool {
		var s tasks.EndpointWithStats
		b.adminDo(t, http.MethodGet, "/v1/endpoints/gen", nil).JSON(t, &s)
		return s.Stats.Queued == 0 && s.Stats.Running == 2
	})
	if p := peak.Load(); p > 2 {
		t.Fatalf("peak concurrency %d over the limit 2", p)
	}
	release <- struct{}{}
	release <- struct{}{}
	for _, id := range ids {
		if got := a.task(t, tok, id, "?wait=20s"); got.TaskStatus != "completed" {
			t.Fatalf("task %s: %+v", id, got)
		}
	}
}

func TestRelayMetrics(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer target.Close()
	ts := relayServer(t)
	ts.putEndpoint(t, "gen", map[string]any{"target_url": target.URL})
	tok := ts.taskToken(t, "shop", -1)
	id := ts.submit(t, tok, map[string]any{"endpoint": "gen"}).TaskID
	if got := ts.task(t, tok, id, "?wait=20s"); got.TaskStatus != "completed" {
		t.Fatalf("task: %+v", got)
	}
	r := ts.adminDo(t, http.MethodGet, "/metrics", nil)
	for _, want := range []string{
		`sluice_relay_tasks{endpoint="gen",state="queued"} 0`,
		`sluice_relay_tasks_ended_total{endpoint="gen",status="completed"} 1`,
		`sluice_relay_call_duration_seconds_count{endpoint="gen",outcome="success"} 1`,
		`sluice_relay_endpoint_limit{endpoint="gen",limit="concurrency"} 1`,
	} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// With archive_dsn set, a finished task is read back from MariaDB once its Redis copy is gone.
func TestTaskArchiveRoundTrip(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "kept in the archive")
	}))
	defer target.Close()
	ts := relayServer(t, func(c *Config) {
		c.ArchiveDSN = mysqltest.New(t)
		// Longer than a maintenance pass (500ms), which archives it first.
		c.RelayReadRetention = 2 * time.Second
	})
	ts.putEndpoint(t, "gen", map[string]any{"target_url": target.URL})
	tok := ts.taskToken(t, "shop", -1)
	id := ts.submit(t, tok, map[string]any{"endpoint": "gen"}).TaskID
	done := ts.task(t, tok, id, "?wait=20s")
	if done.TaskStatus != "completed" || done.Archived {
		t.Fatalf("task: %+v", done)
	}
	var got tasks.TaskResponse
	testwait.Until(t, time.Minute, "the task to be answered from the archive", func() bool {
		got = ts.task(t, tok, id, "")
		return got.Archived
	})
	if got.TaskStatus != "completed" || got.HTTPStatus != 200 || got.TaskResult == nil || *got.TaskResult != "kept in the archive" ||
		got.CreatedAt == nil || !got.CreatedAt.Equal(*done.CreatedAt) {
		t.Fatalf("archived task %+v, finished one %+v", got, done)
	}
	// Still in the submitting namespace only.
	other := ts.taskToken(t, "other", -1)
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/tasks/"+id, other, nil), http.StatusNotFound, "not_found")
}

// A batch submit answers each task, or the error that refused it.
func TestTaskBatchSubmit(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "slow", map[string]any{"target_url": "http://127.0.0.1:9/x", "max_queued": 3})
	tok := ts.taskToken(t, "shop", -1)
	r := ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"tasks": []map[string]any{
		{"endpoint": "slow"}, {"endpoint": "slow"}, {"endpoint": "nope"}, {"endpoint": "slow", "body": "x"}, {"endpoint": "slow"},
	}})
	wantStatus(t, r, http.StatusCreated, "")
	var res struct{ Tasks []tasks.BatchItem }
	r.JSON(t, &res)
	ok, full := 0, 0
	for i, it := range res.Tasks {
		switch {
		case i == 2:
			if it.Error == nil || it.Error.Code != "not_found" {
				t.Fatalf("item 2: %+v", it)
			}
		case it.SubmitResponse != nil && it.TaskID != "":
			ok++
		case it.Error != nil && it.Error.Code == "queue_full":
			full++
		default:
			t.Fatalf("item %d: %+v", i, it)
		}
	}
	if ok != 3 || full != 1 {
		t.Fatalf("%d queued, %d refused as full: %s", ok, full, r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"tasks": []map[string]any{{"endpoint": "slow"}, {"endpoint": "slow", "task_type": "x"}}})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "tasks[1].task_type" {
		t.Fatalf("field %q", r.ErrorField())
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "slow", "tasks": []map[string]any{{}}}), http.StatusBadRequest, "invalid_argument")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"tasks": []map[string]any{}}), http.StatusBadRequest, "invalid_argument")
}

// An endpoint changed on one instance applies on another before the PUT (or DELETE) returns: a
// submit on the other instance right after it sees the change, every time.
func TestEndpointChangeAppliesOnOtherInstancesAtOnce(t *testing.T) {
	t.Parallel()
	a := relayServer(t, noDispatch)
	b := newTestServerOn(t, a.env, noDispatch)
	tok := a.taskToken(t, "shop", -1)
	wantStatus(t, b.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "late"}), http.StatusNotFound, "not_found")
	for i := range 50 {
		name := fmt.Sprintf("new-%d", i)
		a.putEndpoint(t, name, map[string]any{"target_url": "http://127.0.0.1:9/" + name})
		r := b.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": name})
		if r.Status != http.StatusCreated {
			t.Fatalf("submit %d on b right after the PUT on a: %d %s", i, r.Status, r.Body)
		}
	}
	// Changed limits apply on b at once: max_queued 1 is full after one task, a raise to 2 lets
	// one more in, a lowering to 1 shuts it again.
	a.putEndpoint(t, "late", map[string]any{"target_url": "http://127.0.0.1:9/x", "max_queued": 1})
	wantStatus(t, b.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "late"}), http.StatusCreated, "")
	wantStatus(t, b.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "late"}), http.StatusConflict, "queue_full")
	a.putEndpoint(t, "late", map[string]any{"target_url": "http://127.0.0.1:9/x", "max_queued": 2})
	wantStatus(t, b.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "late"}), http.StatusCreated, "")
	var seen tasks.EndpointWithStats
	b.adminDo(t, http.MethodGet, "/v1/endpoints/late", nil).JSON(t, &seen)
	if seen.MaxQueued != 2 || seen.Stats.Queued != 2 {
		t.Fatalf("b's view of the endpoint: %+v", seen)
	}
	a.putEndpoint(t, "late", map[string]any{"target_url": "http://127.0.0.1:9/x", "max_queued": 1})
	wantStatus(t, b.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "late"}), http.StatusConflict, "queue_full")
	// A deletion too.
	wantStatus(t, a.adminDo(t, http.MethodDelete, "/v1/endpoints/late", nil), http.StatusNoContent, "")
	wantStatus(t, b.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"endpoint": "late"}), http.StatusNotFound, "not_found")
}

// A graceful shutdown drains the listeners first, then stops the dispatcher, which waits for the
// call under way and stores its result.
func TestShutdownFinishesCallsUnderWay(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 1), make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "finished during shutdown")
	}))
	defer target.Close()
	other := relayServer(t, noDispatch)
	other.putEndpoint(t, "gen", map[string]any{"target_url": target.URL})
	tok := other.taskToken(t, "shop", -1)

	cfg := Config{RedisURL: other.env.URL, Prefix: other.env.Prefix, AdminToken: testAdminToken, RelayAllowPrivate: true,
		Logger: other.srv.log, Out: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, pub, adm) }()

	id := other.submit(t, tok, map[string]any{"endpoint": "gen"}).TaskID
	<-started
	cancel() // shutdown starts with the call under way
	testwait.Until(t, time.Minute, "the listener to close", func() bool {
		c, err := net.Dial("tcp", pub.Addr().String())
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) before the call under way finished", err)
	default:
	}
	close(release)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	got := other.task(t, tok, id, "")
	if got.TaskStatus != "completed" || got.TaskResult == nil || *got.TaskResult != "finished during shutdown" {
		t.Fatalf("task after shutdown: %+v", got)
	}
}

// Two instances share the endpoint's rate: calls arrive at the target no faster than qps, whichever
// instance's dispatcher makes them.
func TestTaskTwoInstancesShareQPS(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var arrivals []time.Time
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
	}))
	defer target.Close()
	a := relayServer(t)
	a.putEndpoint(t, "rated", map[string]any{"target_url": target.URL, "qps": 50, "concurrency": 100})
	b := newTestServerOn(t, a.env, func(c *Config) { c.RelayAllowPrivate = true })
	tok := a.taskToken(t, "shop", -1)
	const n = 30
	batch := make([]map[string]any, n)
	for i := range batch {
		batch[i] = map[string]any{"endpoint": "rated"}
	}
	wantStatus(t, b.public(t, http.MethodPost, "/v1/tasks", tok, map[string]any{"tasks": batch}), http.StatusCreated, "")
	testwait.Until(t, time.Minute, "every call", func() bool {
		var s tasks.EndpointWithStats
		a.adminDo(t, http.MethodGet, "/v1/endpoints/rated", nil).JSON(t, &s)
		return s.Stats.Totals["completed"] == n
	})
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(arrivals, func(x, y time.Time) int { return x.Compare(y) })
	// At 50 QPS (20ms apart, a burst of one) 30 calls span at least 28 intervals; the margin is
	// for the arrivals' own scheduling jitter, not the limit's.
	if span := arrivals[n-1].Sub(arrivals[0]); len(arrivals) != n || span < 28*20*time.Millisecond*9/10 {
		t.Fatalf("%d calls at 50 QPS arrived within %s", len(arrivals), span)
	}
}

// Cancelling a running offline task marks it cancelled and discards its result.
func TestTaskCancelWhileRunning(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 1), make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "too late")
	}))
	defer target.Close()
	defer close(release)
	ts := relayServer(t)
	ts.putEndpoint(t, "gen", map[string]any{"target_url": target.URL})
	tok := ts.taskToken(t, "shop", -1)
	id := ts.submit(t, tok, map[string]any{"endpoint": "gen"}).TaskID
	<-started
	if got := ts.task(t, tok, id, ""); got.TaskStatus != "processing" {
		t.Fatalf("running task: %+v", got)
	}
	var c tasks.CancelResponse
	r := ts.public(t, http.MethodPost, "/v1/tasks/"+id+"/cancel", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &c)
	if c.TaskStatus != "cancelled" || !c.Cancelled {
		t.Fatalf("cancel: %+v", c)
	}
	release <- struct{}{}
	testwait.Until(t, time.Minute, "the call's result to be discarded", func() bool {
		return ts.srv.dispatcher.Stats().Discarded == 1
	})
	if got := ts.task(t, tok, id, ""); got.TaskStatus != "cancelled" || got.TaskResult != nil {
		t.Fatalf("after the call returned: %+v", got)
	}
}
