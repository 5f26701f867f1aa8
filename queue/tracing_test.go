package queue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/trace"

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
