package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/jaegertest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/tenant"
)

// newTraceparent returns a sampled W3C traceparent of a new trace, and its trace and span ids.
func newTraceparent() (header, traceID, spanID string) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return "00-" + traceID + "-" + spanID + "-01", traceID, spanID
}

// tracedServer is a server that sends its traces to j, and makes calls to loopback addresses.
func tracedServer(t *testing.T, j *jaegertest.Jaeger) *testServer {
	t.Helper()
	return newTestServer(t, func(c *Config) {
		c.Tracing = TracingConfig{Endpoint: "http://" + j.OTLP, ServiceName: "sluice-" + t.Name()}
		c.RelayAllowPrivate = true
	})
}

// traceRecorder is an HTTP target that keeps the traceparent header of every request. It answers
// 500 to as many requests as failures says first.
type traceRecorder struct {
	*httptest.Server
	mu       sync.Mutex
	seen     []string
	failures atomic.Int32
}

func newTraceRecorder(t *testing.T) *traceRecorder {
	t.Helper()
	rec := &traceRecorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Header.Get("traceparent"))
		rec.mu.Unlock()
		if rec.failures.Add(-1) >= 0 {
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(rec.Close)
	return rec
}

// first waits for the first request and returns its traceparent's trace and parent span ids.
func (rec *traceRecorder) first(t *testing.T) (traceID, spanID string) {
	t.Helper()
	var tp string
	testwait.Until(t, 30*time.Second, "a call at the target", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.seen) > 0 {
			tp = rec.seen[0]
		}
		return len(rec.seen) > 0
	})
	parts := strings.Split(tp, "-")
	if len(parts) != 4 {
		t.Fatalf("the call's traceparent is %q", tp)
	}
	return parts[1], parts[2]
}

// wantOutbound waits for the trace of a request sent with the caller's span callerSpan to hold
// the server's span, the producer span named producer (its child) and the CLIENT span named call
// (the producer's child), whose id the target received as the traceparent's parent.
func wantOutbound(t *testing.T, j *jaegertest.Jaeger, traceID, callerSpan, producer, call, received string) {
	t.Helper()
	spans := j.WaitTrace(t, traceID, "server, "+producer+" and "+call+" spans", func(s []jaegertest.Span) bool {
		_, ok := jaegertest.Find(s, call)
		return ok && len(s) == 3
	})
	server, _ := jaegertest.Find(spans, "POST")
	prod, _ := jaegertest.Find(spans, producer)
	client, _ := jaegertest.Find(spans, call)
	if server.Parent() != callerSpan || prod.Parent() != server.SpanID || prod.Tag("span.kind") != "producer" {
		t.Errorf("server span %+v and producer span %+v are not in line under the caller's %s", server, prod, callerSpan)
	}
	if client.Parent() != prod.SpanID || client.Tag("span.kind") != "client" || client.Tag("messaging.sluice.outcome") != "ack" ||
		client.Tag("http.response.status_code") != "200" {
		t.Errorf("call span %+v is not the producer's acked CLIENT child", client)
	}
	if received != client.SpanID {
		t.Errorf("the target received parent span %s, want the call's span %s", received, client.SpanID)
	}
}

// A task submitted with a traceparent is dispatched in the caller's trace, and the endpoint
// receives the dispatch's span as its parent.
func TestTraceTaskDispatchToTarget(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	ts := tracedServer(t, j)
	rec := newTraceRecorder(t)
	ts.putEndpoint(t, "gen", map[string]any{"target_url": rec.URL})
	header, traceID, spanID := newTraceparent()
	r := ts.sendTraced(t, http.MethodPost, "/v1/tasks", header, []byte(`{"endpoint":"gen","body":"draw"}`),
		"Authorization", "Bearer "+ts.taskToken(t, "shop", -1), "Content-Type", "application/json")
	wantStatus(t, r, http.StatusCreated, "")
	gotTrace, gotParent := rec.first(t)
	if gotTrace != traceID {
		t.Fatalf("the target got trace %s, want the caller's %s", gotTrace, traceID)
	}
	wantOutbound(t, j, traceID, spanID, "submit gen", "dispatch gen", gotParent)
}

// A job's callback is delivered in the trace of the request that published it, and the receiver
// gets the delivery's span as its parent.
func TestTraceCallbackToReceiver(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	rec := newTraceRecorder(t)
	traceID, spanID := publishTracedCallback(t, j, rec)
	gotTrace, gotParent := rec.first(t)
	if gotTrace != traceID {
		t.Fatalf("the receiver got trace %s, want the caller's %s", gotTrace, traceID)
	}
	wantOutbound(t, j, traceID, spanID, "publish emails", "callback emails", gotParent)
}

// A callback whose first try fails is tried again in the same trace, and the second try's span
// links to the first's, so the trace shows every try and leads from each retry to the one before.
func TestTraceCallbackRetryLinksToTheFailedTry(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	rec := newTraceRecorder(t)
	rec.failures.Store(1)
	traceID, _ := publishTracedCallback(t, j, rec)
	spans := j.WaitTrace(t, traceID, "two callback spans", func(s []jaegertest.Span) bool {
		return len(jaegertest.All(s, "callback emails")) == 2
	})
	tries := map[string]jaegertest.Span{}
	for _, s := range jaegertest.All(spans, "callback emails") {
		tries[s.Tag("messaging.sluice.delivery_count")] = s
	}
	first, second := tries["1"], tries["2"]
	if first.Tag("messaging.sluice.outcome") != "retry" || second.Tag("messaging.sluice.outcome") != "ack" {
		t.Fatalf("tries %+v: want delivery 1 retried and delivery 2 acked", tries)
	}
	if links := first.FollowsFrom(); len(links) != 0 {
		t.Errorf("the first try links to %v, want nothing", links)
	}
	if links := second.FollowsFrom(); len(links) != 1 || links[0] != traceID+"/"+first.SpanID {
		t.Errorf("the second try links to %v, want the first try's span %s/%s", links, traceID, first.SpanID)
	}
}

// publishTracedCallback publishes, with a new traceparent, a job of queue emails of namespace shop
// whose callback goes to rec, on a server that traces to j; it returns the caller's trace and span.
func publishTracedCallback(t *testing.T, j *jaegertest.Jaeger, rec *traceRecorder) (traceID, spanID string) {
	t.Helper()
	ts := tracedServer(t, j)
	tok := ts.token(t, "shop", tenant.PermPublish)
	ts.allowCallbacks(t, rec.URL+"/hooks")
	header, traceID, spanID := newTraceparent()
	body := `{"payload":{"n":1},"callback":{"url":"` + rec.URL + `/hooks/done"}}`
	r := ts.sendTraced(t, http.MethodPost, "/v1/ns/shop/queues/emails/jobs", header, []byte(body),
		"Authorization", "Bearer "+tok, "Content-Type", "application/json")
	wantStatus(t, r, http.StatusCreated, "")
	return traceID, spanID
}

// sendTraced sends a request with a body and a traceparent header to the public listener.
func (ts *testServer) sendTraced(t *testing.T, method, path, traceparent string, body []byte, header ...string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, ts.PublicURL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("traceparent", traceparent)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return exchange(t, http.DefaultClient, req)
}

// runTracedWorker runs a worker of queue q of namespace ns on ts's Redis that traces to j, acking
// every job.
func runTracedWorker(t *testing.T, ts *testServer, j *jaegertest.Jaeger, ns, q string) {
	t.Helper()
	c, err := queue.NewClient(ts.env.Client, queue.Config{Prefix: ts.env.Prefix, TracerProvider: j.TracerProvider(t, "worker-"+t.Name())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	wq, err := queue.NewQueue[json.RawMessage](c, ns, q, queue.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- wq.Consume(ctx, func(context.Context, *json.RawMessage) error { return nil }, queue.ConsumeConfig{})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Consume: %v", err)
		}
	})
}

// wantCrossing waits for the trace of a request sent with traceparent's ids to hold the server's
// span (child of the caller's), the publish (child of the server's) and the worker's process span
// (child of the publish), and checks their services.
func wantCrossing(t *testing.T, j *jaegertest.Jaeger, traceID, callerSpan, q string) {
	t.Helper()
	spans := j.WaitTrace(t, traceID, "server, publish and process spans", func(s []jaegertest.Span) bool {
		_, ok := jaegertest.Find(s, "process "+q)
		return ok && len(s) == 3
	})
	server, _ := jaegertest.Find(spans, "PUT")
	if server.SpanID == "" {
		server, _ = jaegertest.Find(spans, "POST")
	}
	publish, _ := jaegertest.Find(spans, "publish "+q)
	process, _ := jaegertest.Find(spans, "process "+q)
	if server.Parent() != callerSpan || server.Tag("span.kind") != "server" || server.Service != "sluice-"+t.Name() {
		t.Errorf("server span %+v is not the server's child of the caller's span %s", server, callerSpan)
	}
	if publish.Parent() != server.SpanID || publish.Tag("span.kind") != "producer" {
		t.Errorf("publish span %+v is not the producer child of the server span", publish)
	}
	if process.Parent() != publish.SpanID || process.Service != "worker-"+t.Name() || process.Tag("messaging.sluice.outcome") != "ack" {
		t.Errorf("process span %+v is not the worker's acked child of the publish span", process)
	}
}

// A job published over the native API with a traceparent is processed, by a worker in another
// process, in the caller's trace.
func TestTraceNativePublishToWorker(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	ts := tracedServer(t, j)
	tok := ts.token(t, "shop", tenant.PermPublish)
	header, traceID, spanID := newTraceparent()
	r := ts.sendTraced(t, http.MethodPost, "/v1/ns/shop/queues/orders/jobs", header, []byte(`{"payload":{"n":1}}`),
		"Authorization", "Bearer "+tok, "Content-Type", "application/json")
	wantStatus(t, r, http.StatusCreated, "")
	runTracedWorker(t, ts, j, "shop", "orders")
	wantCrossing(t, j, traceID, spanID, "orders")
}

// The lmstfy-compatible publish carries the trace too.
func TestTraceLmstfyPublishToWorker(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	ts := tracedServer(t, j)
	e := lmstfyEnvOn(t, ts)
	header, traceID, spanID := newTraceparent()
	r := ts.sendTraced(t, http.MethodPut, "/api/lmns/mails", header, []byte(`{"n":1}`), "X-Token", e.token)
	wantStatus(t, r, http.StatusCreated, "")
	runTracedWorker(t, ts, j, "lmns", "mails")
	wantCrossing(t, j, traceID, spanID, "mails")
}

// A server without tracing stores no trace context with a job published with a traceparent, and
// sends Jaeger nothing.
func TestTraceOffSendsNothing(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	ts := newTestServer(t)
	tok := ts.token(t, "shop", tenant.PermPublish)
	header, traceID, _ := newTraceparent()
	r := ts.sendTraced(t, http.MethodPost, "/v1/ns/shop/queues/orders/jobs", header, []byte(`{"payload":1}`),
		"Authorization", "Bearer "+tok, "Content-Type", "application/json")
	wantStatus(t, r, http.StatusCreated, "")
	var res struct {
		JobID string `json:"job_id"`
	}
	r.JSON(t, &res)
	job, err := ts.Queue.Get(ctxT(t), "shop", "orders", res.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if len(job.Attributes) != 0 {
		t.Errorf("job attributes %v, want none", job.Attributes)
	}
	if spans := j.Trace(t, traceID); len(spans) != 0 {
		t.Errorf("Jaeger holds %d spans of the trace", len(spans))
	}
}
