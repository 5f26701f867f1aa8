package queue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"

	"github.com/sluicehq/sluice/internal/testkit/jaegertest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// tracedFixture is a fixture whose client traces to a real Jaeger under a service of its own.
func tracedFixture(t *testing.T, cfg queue.Config) (*fixture, *jaegertest.Jaeger, trace.TracerProvider) {
	t.Helper()
	j := jaegertest.Start(t)
	tp := j.TracerProvider(t, "queue-"+t.Name())
	cfg.TracerProvider = tp
	return setup(t, redistest.New(t), cfg), j, tp
}

// A job published inside a request's span is processed in the same trace: the worker's CONSUMER
// span is the child of the PRODUCER span, which is the child of the request's span. A failed
// first attempt and its retry are both in the trace, each with its delivery number and outcome.
func TestTracePublishRetryAck(t *testing.T) {
	t.Parallel()
	f, j, tp := tracedFixture(t, queue.Config{})
	ctx, request := tp.Tracer("test").Start(ctxT(t), "request")
	q := newTyped(t, f, queue.QueueConfig{})
	id, err := q.Produce(ctx, &task{N: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	request.End()
	job, err := f.client.Get(ctx, f.ns, "q", id)
	if err != nil {
		t.Fatal(err)
	}
	if tp := job.Attributes[queue.AttributeTraceParent]; len(tp) != 55 || tp[3:35] != request.SpanContext().TraceID().String() {
		t.Fatalf("job's traceparent %q is not of the request's trace", tp)
	}

	var attempts atomic.Int32
	runConsumer(t, q, func(ctx context.Context, _ *task) error {
		if attempts.Add(1) == 1 {
			return queue.RetryAfter(0, errors.New("first attempt fails"))
		}
		return nil
	}, queue.ConsumeConfig{})

	traceID := request.SpanContext().TraceID().String()
	spans := j.WaitTrace(t, traceID, "request, publish and two process spans", func(s []jaegertest.Span) bool {
		return len(s) == 4
	})
	publish, ok := jaegertest.Find(spans, "publish q")
	if !ok || publish.Parent() != request.SpanContext().SpanID().String() {
		t.Fatalf("publish span %+v is not the child of the request span", publish)
	}
	if publish.Tag("span.kind") != "producer" || publish.Tag("messaging.system") != "sluice" || publish.Tag("messaging.destination.name") != "q" {
		t.Errorf("publish span tags %+v", publish.Tags)
	}
	process := jaegertest.All(spans, "process q")
	if len(process) != 2 {
		t.Fatalf("got %d process spans, want 2: %+v", len(process), spans)
	}
	outcomes := map[string]string{}
	for _, p := range process {
		if p.Parent() != publish.SpanID || p.Tag("span.kind") != "consumer" {
			t.Errorf("process span %+v is not a consumer child of the publish span", p)
		}
		if p.Tag("messaging.message.id") != publish.Tag("messaging.message.id") {
			t.Errorf("process span names job %q, publish %q", p.Tag("messaging.message.id"), publish.Tag("messaging.message.id"))
		}
		outcomes[p.Tag("messaging.sluice.delivery_count")] = p.Tag("messaging.sluice.outcome")
	}
	if outcomes["1"] != "retry" || outcomes["2"] != "ack" {
		t.Errorf("outcomes by delivery %v, want 1: retry, 2: ack", outcomes)
	}
}

// With TraceLinks, a delivery starts a trace of its own that links to the publish.
func TestTraceLinksStartANewTrace(t *testing.T) {
	t.Parallel()
	f, j, tp := tracedFixture(t, queue.Config{TraceLinks: true})
	ctx, request := tp.Tracer("test").Start(ctxT(t), "request")
	q := newTyped(t, f, queue.QueueConfig{})
	if _, err := q.Produce(ctx, &task{N: 1}, 0); err != nil {
		t.Fatal(err)
	}
	request.End()
	processed := make(chan trace.SpanContext, 1)
	runConsumer(t, q, func(ctx context.Context, _ *task) error {
		processed <- trace.SpanContextFromContext(ctx)
		return nil
	}, queue.ConsumeConfig{})
	sc := <-processed
	if sc.TraceID() == request.SpanContext().TraceID() {
		t.Fatal("the process span is in the publisher's trace")
	}
	spans := j.WaitTrace(t, sc.TraceID().String(), "the process span", func(s []jaegertest.Span) bool { return len(s) == 1 })
	refs := spans[0].References
	if len(refs) != 1 || refs[0].RefType != "FOLLOWS_FROM" || refs[0].TraceID != request.SpanContext().TraceID().String() {
		t.Errorf("process span references %+v, want a link to the publisher's trace", refs)
	}
}

// With tracing off, a publish inside a span writes no trace context into the job.
func TestTraceOffStoresNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := trace.ContextWithRemoteSpanContext(ctxT(t), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled,
	}))
	res, err := f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	job, err := f.client.Get(ctxT(t), f.ns, "q", res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if job.Attributes != nil {
		t.Errorf("job attributes %v, want none", job.Attributes)
	}
}

// A job nacked twice and acked on its third delivery leaves three process spans in the publish's
// trace, and each retry's span links to the span of the attempt before it, so Jaeger leads from
// every attempt to the one that failed before it.
func TestTraceRetriesLinkToThePreviousAttempt(t *testing.T) {
	t.Parallel()
	f, j, tp := tracedFixture(t, queue.Config{})
	ctx, request := tp.Tracer("test").Start(ctxT(t), "request")
	q := newTyped(t, f, queue.QueueConfig{})
	if _, err := q.Produce(ctx, &task{N: 1}, 0); err != nil {
		t.Fatal(err)
	}
	request.End()
	var attempts atomic.Int32
	runConsumer(t, q, func(ctx context.Context, _ *task) error {
		if attempts.Add(1) <= 2 {
			return queue.RetryAfter(0, errors.New("this attempt fails"))
		}
		return nil
	}, queue.ConsumeConfig{})

	traceID := request.SpanContext().TraceID().String()
	spans := j.WaitTrace(t, traceID, "request, publish and three process spans", func(s []jaegertest.Span) bool {
		return len(jaegertest.All(s, "process q")) == 3
	})
	byDelivery := map[string]jaegertest.Span{}
	for _, p := range jaegertest.All(spans, "process q") {
		byDelivery[p.Tag("messaging.sluice.delivery_count")] = p
	}
	want := map[string]string{"1": "retry", "2": "retry", "3": "ack"}
	for d, outcome := range want {
		if got := byDelivery[d].Tag("messaging.sluice.outcome"); got != outcome {
			t.Errorf("delivery %s: outcome %q, want %q", d, got, outcome)
		}
	}
	if links := byDelivery["1"].FollowsFrom(); len(links) != 0 {
		t.Errorf("the first attempt links to %v, want nothing", links)
	}
	for d, prev := range map[string]string{"2": "1", "3": "2"} {
		links := byDelivery[d].FollowsFrom()
		if len(links) != 1 || links[0] != traceID+"/"+byDelivery[prev].SpanID {
			t.Errorf("delivery %s links to %v, want delivery %s's span %s/%s", d, links, prev, traceID, byDelivery[prev].SpanID)
		}
	}
}

// A traced nack whose reply is lost reaches Redis twice and acts once, keeping the failed
// attempt's span: the next delivery's receive span links to it, with the attempt's delivery
// number. A nack from a client that does not trace keeps none, so the delivery after it links to
// no stale attempt.
func TestTracedNackSentTwiceKeepsTheAttempt(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f, proxy := setupBehindProxy(t, queue.Config{TracerProvider: sdk})
	untraced := setup(t, f.env, queue.Config{})
	ctx := ctxT(t)
	id := f.publish(t, queue.PublishParams{Queue: "q", Tries: 3})
	var last queue.Delivery
	received := func(delivery int) sdktrace.ReadOnlySpan {
		t.Helper()
		if last = f.consumeOne(t, "q"); last.Delivery != delivery {
			t.Fatalf("delivery %d, want %d", last.Delivery, delivery)
		}
		spans := rec.Ended()
		return spans[len(spans)-1]
	}
	retryNow := time.Duration(0)

	if links := received(1).Links(); len(links) != 0 {
		t.Fatalf("the first delivery links to %+v", links)
	}
	hctx, handler := sdk.Tracer("test").Start(ctx, "handler")
	rule := proxy.DropReplies(flakyproxy.FunctionCall("nack"), 1)
	out, err := f.client.Nack(hctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: 1, RetryAfter: &retryNow})
	handler.End()
	if err != nil || out != queue.NackRetried || rule.Dropped() != 1 {
		t.Fatalf("nack, reply lost: %s, %v (%d dropped); want retried", out, err, rule.Dropped())
	}
	if s := f.stats(t, "q"); s.Nacked != 1 || s.Retried != 1 {
		t.Fatalf("after the nack: %+v; want it counted once", s)
	}
	links := received(2).Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != handler.SpanContext().SpanID() ||
		links[0].SpanContext.TraceID() != handler.SpanContext().TraceID() {
		t.Fatalf("the second delivery links to %+v, want the failed attempt's span %v", links, handler.SpanContext())
	}
	if got, want := last.Attributes[queue.AttributePreviousAttempt], "1 00-"+handler.SpanContext().TraceID().String()+"-"+handler.SpanContext().SpanID().String()+"-01"; got != want {
		t.Errorf("the second delivery's attribute %s = %q, want %q", queue.AttributePreviousAttempt, got, want)
	}
	if a := attribute.NewSet(links[0].Attributes...); a.HasValue("messaging.sluice.delivery_count") {
		if v, _ := a.Value("messaging.sluice.delivery_count"); v.AsInt64() != 1 {
			t.Errorf("the link names delivery %d, want 1", v.AsInt64())
		}
	} else {
		t.Errorf("the link has no delivery_count: %v", links[0].Attributes)
	}

	if _, err := untraced.client.Nack(hctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: 2, RetryAfter: &retryNow}); err != nil {
		t.Fatal(err)
	}
	if links := received(3).Links(); len(links) != 0 || last.Attributes[queue.AttributePreviousAttempt] != "" {
		t.Errorf("after an untraced nack the delivery links to %+v (attributes %v), want nothing", links, last.Attributes)
	}
}
