package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/tenant"

	"github.com/sluicehq/sluice/queue"
)

// lmstfyEnv is a test server with a namespace and a token made through lmstfy's admin route.
type lmstfyEnv struct {
	ts    *testServer
	ns    string
	token string
}

func newLmstfyEnv(t *testing.T) *lmstfyEnv {
	t.Helper()
	return lmstfyEnvOn(t, newTestServer(t))
}

// lmstfyEnvOn is the lmstfy environment of server ts: namespace lmns and a token of it.
func lmstfyEnvOn(t *testing.T, ts *testServer) *lmstfyEnv {
	t.Helper()
	r := ts.adminDo(t, http.MethodPost, "/token/lmns?description=tests", nil)
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /token: %d %s", r.Status, r.Body)
	}
	var tok struct{ Token string }
	r.JSON(t, &tok)
	return &lmstfyEnv{ts: ts, ns: "lmns", token: tok.Token}
}

// lmstfyDo sends a request with lmstfy's headers (name, value pairs) and a raw body.
func lmstfyDo(t *testing.T, method, url string, body []byte, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// api sends an /api request for the env's namespace with its token in X-Token; rel is the path
// after /api/{ns}/ (with any query).
func (e *lmstfyEnv) api(t *testing.T, method, rel string, body []byte, headers ...string) response {
	t.Helper()
	return lmstfyDo(t, method, e.ts.PublicURL+"/api/"+e.ns+"/"+rel, body, append([]string{"X-Token", e.token}, headers...)...)
}

// wantLmstfy fails the test unless the response has the status and exactly the JSON body want
// (nil: no body).
func wantLmstfy(t *testing.T, r response, status int, want any) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d (body %s), want %d", r.Status, r.Body, status)
	}
	if want == nil {
		if len(r.Body) != 0 {
			t.Fatalf("body %q, want none", r.Body)
		}
		return
	}
	wb, _ := json.Marshal(want)
	var got, exp any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.Body, err)
	}
	_ = json.Unmarshal(wb, &exp)
	gb, _ := json.Marshal(got)
	eb, _ := json.Marshal(exp)
	if !bytes.Equal(gb, eb) {
		t.Fatalf("body %s, want %s", gb, eb)
	}
}

// lmstfyNull is a want of wantLmstfy for a JSON null body.
var lmstfyNull = json.RawMessage("null")

func lmstfyErr(msg string) map[string]string { return map[string]string{"error": msg} }

var lmstfyNoJob = map[string]string{"msg": "no job available"}

// publish publishes data with the query q and returns the job id.
func (e *lmstfyEnv) publish(t *testing.T, queueName, q, data string, headers ...string) string {
	t.Helper()
	r := e.api(t, http.MethodPut, queueName+q, []byte(data), headers...)
	var b map[string]string
	if r.Status != http.StatusCreated {
		t.Fatalf("publish: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &b)
	if b["msg"] != "published" || b["job_id"] == "" || len(b) != 2 {
		t.Fatalf("publish answered %s", r.Body)
	}
	return b["job_id"]
}

// lmstfyConsumed is a job as lmstfy's consume answers it.
type lmstfyConsumed struct {
	Msg         string            `json:"msg"`
	Namespace   string            `json:"namespace"`
	Queue       string            `json:"queue"`
	JobID       string            `json:"job_id"`
	Data        []byte            `json:"data"`
	TTL         int64             `json:"ttl"`
	ElapsedMS   int64             `json:"elapsed_ms"`
	RemainTries int64             `json:"remain_tries"`
	Attributes  map[string]string `json:"attributes"`
}

func (e *lmstfyEnv) consume(t *testing.T, rel string) lmstfyConsumed {
	t.Helper()
	r := e.api(t, http.MethodGet, rel, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("consume %s: %d %s", rel, r.Status, r.Body)
	}
	var j lmstfyConsumed
	r.JSON(t, &j)
	return j
}

func TestLmstfyPublishConsumeAck(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	id := e.publish(t, "q", "", "hello")

	r := e.api(t, http.MethodGet, "q", nil)
	if r.Status != http.StatusOK || r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("consume: %d %s (request id %q)", r.Status, r.Body, r.Header.Get("X-Request-Id"))
	}
	var raw map[string]any
	r.JSON(t, &raw)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"attributes", "data", "elapsed_ms", "job_id", "msg", "namespace", "queue", "remain_tries", "ttl"}
	if !slices.Equal(keys, want) {
		t.Fatalf("consume keys %v, want %v", keys, want)
	}
	var j lmstfyConsumed
	r.JSON(t, &j)
	if j.Msg != "new job" || j.Namespace != "lmns" || j.Queue != "q" || j.JobID != id || string(j.Data) != "hello" {
		t.Fatalf("consumed %+v", j)
	}
	if raw["data"] != base64.StdEncoding.EncodeToString([]byte("hello")) || raw["attributes"] != nil {
		t.Fatalf("data %v, attributes %v", raw["data"], raw["attributes"])
	}
	// Defaults: ttl 86400 from publish, tries 1 (none left after this delivery).
	if j.TTL < 86390 || j.TTL > 86400 || j.RemainTries != 0 || j.ElapsedMS < 0 {
		t.Fatalf("ttl %d, remain_tries %d, elapsed_ms %d", j.TTL, j.RemainTries, j.ElapsedMS)
	}
	// The default ttr is 120 seconds.
	got, err := e.ts.Queue.Get(ctxT(t), e.ns, "q", id)
	if err != nil {
		t.Fatal(err)
	}
	if lease := time.Until(got.LeaseUntil); lease < 110*time.Second || lease > 121*time.Second {
		t.Fatalf("lease %s, want about 120s", lease)
	}

	wantLmstfy(t, e.api(t, http.MethodDelete, "q/job/"+id, nil), http.StatusNoContent, nil)
	wantLmstfy(t, e.api(t, http.MethodGet, "q", nil), http.StatusNotFound, lmstfyNoJob)
	// The job is gone: peeking it answers 404, acking it again still 204.
	wantLmstfy(t, e.api(t, http.MethodGet, "q/job/"+id, nil), http.StatusNotFound, lmstfyErr("job not found"))
	wantLmstfy(t, e.api(t, http.MethodDelete, "q/job/"+id, nil), http.StatusNoContent, nil)
	st, err := e.ts.Queue.Stats(ctxT(t), e.ns, "q")
	if err != nil {
		t.Fatal(err)
	}
	if st.Acked != 1 || st.Deleted != 0 {
		t.Fatalf("acked %d deleted %d: the ack of a leased job must count as an ack", st.Acked, st.Deleted)
	}
}

func TestLmstfyDeleteCancelsReadyJob(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	id := e.publish(t, "q", "?delay=100", "later")
	wantLmstfy(t, e.api(t, http.MethodDelete, "q/job/"+id, nil), http.StatusNoContent, nil)
	if _, err := e.ts.Queue.Get(ctxT(t), e.ns, "q", id); err == nil {
		t.Fatal("a deleted delayed job still exists")
	}
	id = e.publish(t, "q", "", "now")
	wantLmstfy(t, e.api(t, http.MethodDelete, "q/job/"+id, nil), http.StatusNoContent, nil)
	wantLmstfy(t, e.api(t, http.MethodGet, "q", nil), http.StatusNotFound, lmstfyNoJob)
	wantLmstfy(t, e.api(t, http.MethodDelete, "q/job/nosuchjob", nil), http.StatusNoContent, nil)
}

func TestLmstfyPublishParams(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	id := e.publish(t, "q", "?ttl=30&tries=3&delay=0", "x")
	r := e.api(t, http.MethodGet, "q/job/"+id, nil)
	var p map[string]any
	r.JSON(t, &p)
	if p["ttl"].(float64) != 30 || p["remain_tries"].(float64) != 3 || p["job_id"] != id || p["msg"] != nil {
		t.Fatalf("peek job: %s", r.Body)
	}
	// ttl=0: forever.
	id = e.publish(t, "forever", "?ttl=0", "x")
	j, err := e.ts.Queue.Get(ctxT(t), e.ns, "forever", id)
	if err != nil || !j.ExpiresAt.IsZero() || j.Tries != 1 {
		t.Fatalf("ttl=0 job: %+v %v", j, err)
	}
	// delay keeps the job from consumers.
	id = e.publish(t, "delayed", "?delay=60&ttl=120", "x")
	wantLmstfy(t, e.api(t, http.MethodGet, "delayed", nil), http.StatusNotFound, lmstfyNoJob)
	if j, err := e.ts.Queue.Get(ctxT(t), e.ns, "delayed", id); err != nil || j.State != queue.StateDelayed {
		t.Fatalf("delayed job: %+v %v", j, err)
	}
	// priority (some lmstfy versions have it): higher first.
	e.publish(t, "prio", "", "low")
	e.publish(t, "prio", "?priority=9", "high")
	if j := e.consume(t, "prio"); string(j.Data) != "high" {
		t.Fatalf("got %q first, want the higher priority", j.Data)
	}
}

func TestLmstfyBadRequests(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	long := strings.Repeat("a", 256)
	cases := []struct {
		method, rel string
		status      int
		msg         string
	}{
		{"PUT", "q?delay=-1", 400, "invalid delay"},
		{"PUT", "q?delay=4294967296", 400, "invalid delay"},
		{"PUT", "q?ttl=abc", 400, "invalid ttl"},
		{"PUT", "q?ttl=", 400, "invalid ttl"},
		{"PUT", "q?ttl=5&delay=10", 400, "ttl is shorter than delay"},
		{"PUT", "q?ttl=10&delay=10", 400, "ttl must be longer than delay"},
		{"PUT", "q?tries=0", 400, "tries shouldn't be zero"},
		{"PUT", "q?tries=65536", 400, "invalid tries"},
		{"PUT", "q?priority=256", 400, "invalid priority"},
		{"PUT", "q/bulk?tries=x", 400, "invalid tries"},
		{"GET", "q?ttr=x", 400, "invalid ttr"},
		{"GET", "q?timeout=-1", 400, "invalid timeout"},
		{"GET", "q?count=0", 400, "invalid count"},
		{"GET", "q?count=101", 400, "invalid count"},
		{"GET", "q?freeze_tries=maybe", 400, "invalid freeze_tries value"},
		{"GET", ",,", 400, "invalid queue name(s)"},
		{"GET", "a,b.c", 400, "queue name contains forbidden characters"},
		{"GET", "a," + long, 400, "namespace or queue name too long"},
		{"PUT", "q.x", 400, "queue name contains forbidden characters"},
		{"PUT", long, 400, "namespace or queue name too long"},
		{"PUT", "a,b", 400, "queue name contains forbidden characters"},
		{"PUT", "q/deadletter?limit=0", 400, "invalid limit"},
		{"PUT", "q/deadletter?limit=0&ttl=x", 400, "invalid limit"},
		{"GET", "", 404, "api not found"},
		{"PUT", "q/deadletter?ttl=-5", 400, "invalid ttl"},
		{"DELETE", "q/deadletter?limit=x", 400, "invalid limit"},
		{"POST", "q", 404, "api not found"},
		{"GET", "q/job/x/y", 404, "api not found"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.rel, func(t *testing.T) {
			t.Parallel()
			r := e.api(t, c.method, c.rel, []byte("x"))
			wantLmstfy(t, r, c.status, lmstfyErr(c.msg))
		})
	}
	t.Run("bad namespace", func(t *testing.T) {
		t.Parallel()
		r := lmstfyDo(t, "PUT", e.ts.PublicURL+"/api/bad.ns/q", []byte("x"), "X-Token", e.token)
		wantLmstfy(t, r, 400, lmstfyErr("namespace name contains forbidden characters"))
	})
	t.Run("body too large", func(t *testing.T) {
		t.Parallel()
		big := bytes.Repeat([]byte("x"), int(e.ts.srv.cfg.MaxBodyBytes)+1)
		wantLmstfy(t, e.api(t, "PUT", "q", big), 413, lmstfyErr("body too large"))
	})
	t.Run("nothing published", func(t *testing.T) {
		t.Parallel()
		st, err := e.ts.Queue.Stats(ctxT(t), e.ns, "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Published != 0 {
			t.Fatalf("%d jobs published by bad requests", st.Published)
		}
	})
}

func TestLmstfyAuth(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	base := e.ts.PublicURL + "/api/lmns/q"
	wantLmstfy(t, lmstfyDo(t, "PUT", base, []byte("x")), 401, lmstfyErr("token not found"))
	wantLmstfy(t, lmstfyDo(t, "PUT", base, []byte("x"), "X-Token", "sk_nope"), 401, lmstfyErr("invalid token"))
	wantLmstfy(t, lmstfyDo(t, "GET", base+"/size", nil), 401, lmstfyErr("token not found"))
	wantLmstfy(t, lmstfyDo(t, "PUT", base, []byte("x"), "X-Token", "other:"+e.token), 404, lmstfyErr("pool not found"))
	// A token of another namespace is not valid here.
	other := e.ts.token(t, "otherns")
	wantLmstfy(t, lmstfyDo(t, "PUT", base, []byte("x"), "X-Token", other), 401, lmstfyErr("invalid token"))
	// ?token= works as well as X-Token, and so does the default pool prefix.
	if r := lmstfyDo(t, "PUT", base+"?token="+url.QueryEscape(e.token), []byte("x")); r.Status != 201 {
		t.Fatalf("?token=: %d %s", r.Status, r.Body)
	}
	for _, prefix := range []string{"default:", ":"} {
		if r := lmstfyDo(t, "PUT", base, []byte("x"), "X-Token", prefix+e.token); r.Status != 201 {
			t.Fatalf("token %q+token: %d %s", prefix, r.Status, r.Body)
		}
	}
	// Sluice tokens carry permissions; lmstfy's admin route makes tokens with all of them.
	pubOnly := e.ts.token(t, e.ns, tenant.PermPublish)
	r := lmstfyDo(t, "GET", base, nil, "X-Token", pubOnly)
	if r.Status != 403 || !strings.Contains(lmstfyErrMsg(r), "consume") {
		t.Fatalf("consume with a publish-only token: %d %s", r.Status, r.Body)
	}
	consOnly := e.ts.token(t, e.ns, tenant.PermConsume)
	if r := lmstfyDo(t, "DELETE", base, nil, "X-Token", consOnly); r.Status != 403 {
		t.Fatalf("destroy with a consume-only token: %d %s", r.Status, r.Body)
	}
	if r := lmstfyDo(t, "GET", base+"/size", nil, "X-Token", consOnly); r.Status != 200 {
		t.Fatalf("size with a consume-only token: %d %s", r.Status, r.Body)
	}
	// A revoked token stops working at once.
	wantLmstfy(t, e.ts.adminDo(t, "DELETE", "/token/lmns/"+url.PathEscape(e.token), nil), 204, nil)
	wantLmstfy(t, e.api(t, "GET", "q/size", nil), 401, lmstfyErr("invalid token"))
}

// lmstfyErrMsg returns the "error" of an lmstfy error body.
func lmstfyErrMsg(r response) string {
	var b map[string]any
	_ = json.Unmarshal(r.Body, &b)
	s, _ := b["error"].(string)
	return s
}

func TestLmstfyConsumeCount(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	var ids []string
	for i := range 3 {
		ids = append(ids, e.publish(t, "q", "", fmt.Sprint(i)))
	}
	r := e.api(t, "GET", "q?count=2&ttr=30", nil)
	var jobs []lmstfyConsumed
	if r.Status != 200 {
		t.Fatalf("count=2: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &jobs)
	if len(jobs) != 2 || jobs[0].JobID != ids[0] || jobs[1].JobID != ids[1] || jobs[0].Msg != "new job" {
		t.Fatalf("count=2 got %+v", jobs)
	}
	// count > 1 answers an array even when one job is left.
	r = e.api(t, "GET", "q?count=5", nil)
	jobs = nil
	r.JSON(t, &jobs)
	if r.Status != 200 || len(jobs) != 1 || jobs[0].JobID != ids[2] {
		t.Fatalf("count=5 with one job: %d %s", r.Status, r.Body)
	}
	wantLmstfy(t, e.api(t, "GET", "q?count=5", nil), 404, lmstfyNoJob)
}

func TestLmstfyBlockingConsumeWokenByPublish(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	got := make(chan response, 1)
	go func() { got <- e.api(t, "GET", "q?timeout=20", nil) }()
	// The consumer is blocked once it listens on the queue's channel.
	ch := e.ts.srv.cfg.Prefix + ":{" + e.ns + ":q}:notify"
	testwait.Until(t, time.Minute, "the consumer to block", func() bool {
		n, err := e.ts.env.Client.PubSubNumSub(ctxT(t), ch).Result()
		return err == nil && n[ch] > 0
	})
	id := e.publish(t, "q", "", "wake")
	r := <-got
	var j lmstfyConsumed
	r.JSON(t, &j)
	if r.Status != 200 || j.JobID != id {
		t.Fatalf("blocked consume got %d %s", r.Status, r.Body)
	}
}

func TestLmstfyMultiQueueConsume(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	low := e.publish(t, "low", "", "l")
	high := e.publish(t, "high", "", "h")
	// The order of the list is the priority, whatever the publish order; no timeout needed.
	if j := e.consume(t, "high,low"); j.JobID != high || j.Queue != "high" {
		t.Fatalf("first %+v, want the job of high", j)
	}
	if j := e.consume(t, "high,low,high"); j.JobID != low || j.Queue != "low" {
		t.Fatalf("second %+v, want the job of low", j)
	}
	wantLmstfy(t, e.api(t, "GET", "high,low?timeout=1", nil), 404, lmstfyNoJob)
}

func TestLmstfyRepublish(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	id := e.publish(t, "q", "", "v1")
	e.consume(t, "q")
	r := e.api(t, "PUT", "q/job/"+id+"?ttl=10&tries=2", []byte("v2"))
	var b map[string]string
	r.JSON(t, &b)
	if r.Status != 201 || b["msg"] != "published" || b["job_id"] == "" || b["job_id"] == id {
		t.Fatalf("republish: %d %s", r.Status, r.Body)
	}
	wantLmstfy(t, e.api(t, "GET", "q/job/"+id, nil), 404, lmstfyErr("job not found"))
	j := e.consume(t, "q")
	if j.JobID != b["job_id"] || string(j.Data) != "v2" || j.TTL != 10 || j.RemainTries != 1 {
		t.Fatalf("republished job %+v", j)
	}
}

func TestLmstfyBulkPublish(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	body := `["hello msg", 123456, {"msg":"success"}, ["foo","bar"], true]`
	r := e.api(t, "PUT", "q/bulk?ttl=60", []byte(body), "Enable-Job-Version", "yes", "Job-Attr-Team", "a")
	var b struct {
		Msg    string   `json:"msg"`
		JobIDs []string `json:"job_ids"`
	}
	r.JSON(t, &b)
	if r.Status != 201 || b.Msg != "published" || len(b.JobIDs) != 5 {
		t.Fatalf("bulk: %d %s", r.Status, r.Body)
	}
	want := []string{`"hello msg"`, `123456`, `{"msg":"success"}`, `["foo","bar"]`, `true`}
	for i, w := range want {
		j := e.consume(t, "q")
		if j.JobID != b.JobIDs[i] || string(j.Data) != w || j.Attributes["team"] != "a" {
			t.Fatalf("job %d: %+v, want data %s", i, j, w)
		}
	}
	wantLmstfy(t, e.api(t, "PUT", "q/bulk", []byte(`[]`)), 400, lmstfyErr("no jobs"))
	wantLmstfy(t, e.api(t, "PUT", "q/bulk", []byte(`{"a":1}`)), 400, lmstfyErr("request body should be an array of objects"))
	many := "[" + strings.TrimSuffix(strings.Repeat("1,", 65), ",") + "]"
	wantLmstfy(t, e.api(t, "PUT", "q/bulk", []byte(many)), 400, lmstfyErr("too many jobs"))
}

func TestLmstfyAttributes(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	// Names come back lowercased, as lmstfy's current release answers them, whatever case the
	// client (or a proxy) gave the header on the wire.
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPut, e.ts.PublicURL+"/api/"+e.ns+"/q", strings.NewReader("a"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header["X-Token"] = []string{e.token}
	req.Header["enable-job-version"] = []string{"Yes"}
	req.Header["Job-Attr-Trace-Id"] = []string{"t1"}
	req.Header["job-attr-kind"] = []string{"mail"}
	req.Header["JOB-ATTR-REGION"] = []string{"EU-West"}
	req.Header["Job-Attr-Empty"] = []string{""}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d", resp.StatusCode)
	}
	want := map[string]string{"trace-id": "t1", "kind": "mail", "region": "EU-West"}
	peek := e.api(t, "GET", "q/peek", nil)
	var peeked struct {
		JobID      string            `json:"job_id"`
		Attributes map[string]string `json:"attributes"`
	}
	peek.JSON(t, &peeked)
	if !maps.Equal(peeked.Attributes, want) {
		t.Fatalf("peek: attributes %v, want %v", peeked.Attributes, want)
	}
	// Consume answers them in lmstfy's form: a JSON object of lowercase names (keys sorted).
	r := e.api(t, "GET", "q?ttr=30", nil)
	var raw map[string]json.RawMessage
	r.JSON(t, &raw)
	if got := string(raw["attributes"]); got != `{"kind":"mail","region":"EU-West","trace-id":"t1"}` {
		t.Fatalf("consume: attributes %s", got)
	}
	var got struct{ Attributes map[string]string }
	e.api(t, "GET", "q/job/"+peeked.JobID, nil).JSON(t, &got)
	if !maps.Equal(got.Attributes, want) {
		t.Fatalf("get: attributes %v, want %v", got.Attributes, want)
	}
	if _, canonical := got.Attributes["Trace-Id"]; canonical {
		t.Fatal("a canonical header name is an attribute name")
	}

	// Without Enable-Job-Version the headers are ignored, as lmstfy ignores them.
	id := e.publish(t, "q", "", "b", "Job-Attr-Kind", "mail")
	r = e.api(t, "GET", "q/job/"+id, nil)
	var p map[string]any
	r.JSON(t, &p)
	if p["attributes"] != nil {
		t.Fatalf("attributes without Enable-Job-Version: %s", r.Body)
	}
	hdrs := []string{"Enable-Job-Version", "yes"}
	for i := range 16 {
		hdrs = append(hdrs, fmt.Sprintf("Job-Attr-K%d", i), "v")
	}
	e.publish(t, "q", "", "sixteen", hdrs...)
	hdrs = append(hdrs, "Job-Attr-K16", "v")
	wantLmstfy(t, e.api(t, "PUT", "q", []byte("c"), hdrs...), 400, lmstfyErr("too many attributes, cannot exceed 16"))
}

func TestLmstfyPeekAndSize(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	wantLmstfy(t, e.api(t, "GET", "q/peek", nil), 404, lmstfyErr("the queue is empty"))
	wantLmstfy(t, e.api(t, "GET", "q/size", nil), 200, map[string]any{"namespace": "lmns", "queue": "q", "size": 0})
	first := e.publish(t, "q", "?ttl=100&tries=2", "one")
	e.publish(t, "q", "", "two")
	r := e.api(t, "GET", "q/peek", nil)
	var p map[string]any
	r.JSON(t, &p)
	if r.Status != 200 || p["job_id"] != first || p["data"] != base64.StdEncoding.EncodeToString([]byte("one")) ||
		p["ttl"].(float64) != 100 || p["remain_tries"].(float64) != 2 || p["namespace"] != "lmns" || p["queue"] != "q" {
		t.Fatalf("peek: %d %s", r.Status, r.Body)
	}
	if _, ok := p["elapsed_ms"]; !ok || p["msg"] != nil {
		t.Fatalf("peek: %s", r.Body)
	}
	wantLmstfy(t, e.api(t, "GET", "q/size", nil), 200, map[string]any{"namespace": "lmns", "queue": "q", "size": 2})
	wantLmstfy(t, e.api(t, "GET", "q/job/nope", nil), 404, lmstfyErr("job not found"))

	// DELETE /api/{ns}/{q} empties the queue.
	wantLmstfy(t, e.api(t, "DELETE", "q", nil), 204, nil)
	wantLmstfy(t, e.api(t, "GET", "q/size", nil), 200, map[string]any{"namespace": "lmns", "queue": "q", "size": 0})
	wantLmstfy(t, e.api(t, "GET", "q", nil), 404, lmstfyNoJob)
}

func TestLmstfyDeadLetter(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	empty := map[string]any{"namespace": "lmns", "queue": "q", "deadletter_size": 0, "deadletter_head": ""}
	wantLmstfy(t, e.api(t, "GET", "q/deadletter", nil), 200, empty)

	// A job whose only try runs out of time goes to the dead letter (lmstfy's path there).
	id := e.publish(t, "q", "?tries=1", "d1")
	if j := e.consume(t, "q?ttr=1"); j.JobID != id {
		t.Fatalf("consumed %+v", j)
	}
	testwait.Until(t, time.Minute, "the job to die", func() bool {
		n, err := e.ts.Queue.DeadSize(ctxT(t), e.ns, "q")
		return err == nil && n == 1
	})
	wantLmstfy(t, e.api(t, "GET", "q/deadletter", nil), 200,
		map[string]any{"namespace": "lmns", "queue": "q", "deadletter_size": 1, "deadletter_head": id})
	wantLmstfy(t, e.api(t, "GET", "q/deadletter/size", nil), 200, map[string]any{"namespace": "lmns", "queue": "q", "size": 1})

	// Two more dead jobs, by nack without retry (no waiting).
	var more []string
	for i := range 2 {
		mid := e.publish(t, "q", "?tries=3", fmt.Sprint("m", i))
		j := e.consume(t, "q")
		if _, err := e.ts.Queue.Nack(ctxT(t), queue.NackParams{Namespace: e.ns, Queue: "q", ID: j.JobID, Delivery: 1, NoRetry: true}); err != nil {
			t.Fatal(err)
		}
		more = append(more, mid)
	}
	wantLmstfy(t, e.api(t, "GET", "q/deadletter/size", nil), 200, map[string]any{"namespace": "lmns", "queue": "q", "size": 3})

	// Respawn the oldest (default limit 1) with a ttl: it is consumable again, with its tries.
	wantLmstfy(t, e.api(t, "PUT", "q/deadletter?ttl=50", nil), 200, map[string]any{"msg": "respawned", "count": 1})
	j := e.consume(t, "q")
	if j.JobID != id || string(j.Data) != "d1" || j.TTL != 50 || j.RemainTries != 0 {
		t.Fatalf("respawned job %+v", j)
	}
	// Delete one, then respawn more than there are.
	wantLmstfy(t, e.api(t, "DELETE", "q/deadletter", nil), 204, nil)
	wantLmstfy(t, e.api(t, "GET", "q/deadletter", nil), 200,
		map[string]any{"namespace": "lmns", "queue": "q", "deadletter_size": 1, "deadletter_head": more[1]})
	wantLmstfy(t, e.api(t, "PUT", "q/deadletter?limit=10", nil), 200, map[string]any{"msg": "respawned", "count": 1})
	if j := e.consume(t, "q"); j.JobID != more[1] || j.RemainTries != 2 {
		t.Fatalf("respawned %+v", j)
	}
	wantLmstfy(t, e.api(t, "DELETE", "q/deadletter?limit=10", nil), 204, nil)
	wantLmstfy(t, e.api(t, "GET", "q/deadletter", nil), 200, empty)
}

func TestLmstfyConsumeAfterShutdownStarts(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	got := make(chan response, 1)
	go func() { got <- e.api(t, "GET", "q?timeout=30", nil) }()
	ch := e.ts.srv.cfg.Prefix + ":{" + e.ns + ":q}:notify"
	testwait.Until(t, time.Minute, "the consumer to block", func() bool {
		n, err := e.ts.env.Client.PubSubNumSub(ctxT(t), ch).Result()
		return err == nil && n[ch] > 0
	})
	e.ts.srv.drain()
	wantLmstfy(t, <-got, 404, lmstfyNoJob)
}

func TestLmstfyConsumeTimeoutCappedByServer(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.MaxConsumeTimeout = 50 * time.Millisecond })
	tok := ts.token(t, "capns")
	// A timeout over the server's limit waits the limit, then answers as lmstfy does.
	r := lmstfyDo(t, "GET", ts.PublicURL+"/api/capns/q?timeout=600", nil, "X-Token", tok)
	wantLmstfy(t, r, 404, lmstfyNoJob)
	if r.Header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-ID header")
	}
}

func TestLmstfyRedisDownIsNotTheCallersFault(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	if err := e.ts.srv.rdb.Close(); err != nil {
		t.Fatal(err)
	}
	r := e.api(t, "PUT", "q", []byte("x"))
	if r.Status != 503 || r.Header.Get("Retry-After") == "" || lmstfyErrMsg(r) == "" {
		t.Fatalf("publish with Redis gone: %d %s (Retry-After %q)", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
}

// The reserved attribute a native payload_base64 publish stores is never shown, on these routes
// either: consume, peek and get of such a job answer "attributes": null.
func TestLmstfyHidesReservedAttributes(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	tok := e.ts.token(t, e.ns)
	// "MTIz" is 123: bytes that look like JSON, which the server marks with its attribute.
	r := e.ts.public(t, http.MethodPost, "/v1/ns/"+e.ns+"/queues/q/jobs", tok, map[string]any{
		"payload_base64": "MTIz", "attributes": map[string]string{"lang": "en"}})
	wantStatus(t, r, http.StatusCreated, "")
	var pub jobs.PublishResult
	r.JSON(t, &pub)
	r = e.ts.public(t, http.MethodPost, "/v1/ns/"+e.ns+"/queues/q/jobs", tok, map[string]any{"payload_base64": "MTIz"})
	wantStatus(t, r, http.StatusCreated, "")
	for _, rel := range []string{"q/peek", "q/job/" + pub.JobID} {
		var j lmstfyConsumed
		e.api(t, http.MethodGet, rel, nil).JSON(t, &j)
		if len(j.Attributes) != 1 || j.Attributes["lang"] != "en" {
			t.Fatalf("GET %s: attributes %v, want only lang", rel, j.Attributes)
		}
	}
	if j := e.consume(t, "q"); len(j.Attributes) != 1 || j.Attributes["lang"] != "en" {
		t.Fatalf("consume: attributes %v, want only lang", j.Attributes)
	}
	r = e.api(t, http.MethodGet, "q", nil)
	var raw map[string]json.RawMessage
	r.JSON(t, &raw)
	if string(raw["attributes"]) != "null" {
		t.Fatalf("consume of a job with no public attribute: attributes %s, want null", raw["attributes"])
	}
}

// lmstfy keeps attribute names up to 32 bytes and values up to 128, cutting longer ones (a value
// at a character boundary, so it stays UTF-8).
func TestLmstfyLongAttributesAreCut(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	name := "Name-" + strings.Repeat("x", 40)
	value := strings.Repeat("v", 127) + "é" // 129 bytes: the cut falls inside é
	long := strings.Repeat("w", 200)
	e.publish(t, "q", "", "a", "Enable-Job-Version", "yes", "Job-Attr-"+name, value,
		"Job-Attr-"+strings.Repeat("y", 32), long)
	j := e.consume(t, "q")
	want := map[string]string{
		strings.ToLower(name)[:32]: strings.Repeat("v", 127),
		strings.Repeat("y", 32):    long[:128],
	}
	if !maps.Equal(j.Attributes, want) {
		t.Fatalf("attributes %v, want %v", j.Attributes, want)
	}
}

// Go's mux routes HEAD to GET handlers; a HEAD of the consume route must not lease a job whose
// body nobody reads. It answers as lmstfy's router does for a route it does not have.
func TestLmstfyHeadDoesNotConsume(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	e.publish(t, "q", "", "a")
	r := e.api(t, http.MethodHead, "q", nil)
	if r.Status != http.StatusNotFound {
		t.Fatalf("HEAD consume: %d, want 404", r.Status)
	}
	st, err := e.ts.Queue.Stats(ctxT(t), e.ns, "q")
	if err != nil || st.Ready != 1 || st.Consumed != 0 {
		t.Fatalf("HEAD consume changed the queue: %+v %v", st, err)
	}
	if j := e.consume(t, "q"); string(j.Data) != "a" {
		t.Fatalf("consume after HEAD: %q", j.Data)
	}
}

// TestUncleanLmstfyPathAnswersInLmstfyShape: anything under /api that no route serves, paths the
// mux would clean (and redirect) included, answers as lmstfy's router does.
func TestUncleanLmstfyPathAnswersInLmstfyShape(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	for _, c := range []struct{ method, path string }{
		{http.MethodPut, "/api/lmns/./q"},
		{http.MethodGet, "/api//lmns/q"},
		{http.MethodGet, "/api/lmns/q/../q"},
		{http.MethodGet, "/api"},
	} {
		r := lmstfyDo(t, c.method, e.ts.PublicURL+c.path, []byte("x"), "X-Token", e.token)
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			wantLmstfy(t, r, http.StatusNotFound, lmstfyErr("api not found"))
		})
	}
}
