package tracing

import (
	"context"
	"errors"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Tracing off must cost a delivery, a call and a publish nothing: no span, no allocation. A
// variadic End at the call site built its attribute slice on the heap for every job even with no
// span (found by the worker's benchmark: one allocation per job more than before tracing).
func TestOffAllocatesNothing(t *testing.T) {
	var off *Tracer
	ctx := context.Background()
	failed := errors.New("handler failed")
	header := http.Header{"Content-Type": {"application/json"}}
	stored := Carrier{TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	previous := "1 " + stored[TraceParent]
	inSpan := trace.ContextWithRemoteSpanContext(ctx, trace.SpanContextFromContext(FromHeader(ctx, stored)))
	allocs := testing.AllocsPerRun(100, func() {
		c, span := off.StartFrom(ctx, stored, "process q", 0)
		EndOutcome(span, failed, OutcomeRetry)
		c, span = off.StartAttempt(c, stored, previous, "process q", 0)
		if off.AttemptRef(inSpan, 2) != "" {
			t.Fatal("an attempt stored with tracing off")
		}
		EndOutcome(span, nil, OutcomeAck)
		_, span, h := off.StartCall(c, nil, "", "dispatch e", header)
		EndCall(span, 200, nil, OutcomeAck)
		if len(h) != 1 {
			t.Fatalf("header changed with tracing off: %v", h)
		}
		Inject(c, nil)
	})
	if allocs != 0 {
		t.Fatalf("tracing off allocated %v times per job, want 0", allocs)
	}
}

// An attempt's span is kept as "<delivery> <traceparent>" and the next attempt's span links to
// it. What a job record holds is not trusted: a value that does not parse links nothing, and the
// span still starts.
func TestAttemptLinks(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), false)
	ctx, failed := tr.Start(context.Background(), "process q", trace.SpanKindConsumer)
	ref := tr.AttemptRef(ctx, 4)
	failed.End()
	if want := "4 00-" + failed.SpanContext().TraceID().String() + "-" + failed.SpanContext().SpanID().String() + "-01"; ref != want {
		t.Fatalf("AttemptRef = %q, want %q", ref, want)
	}
	if got := tr.AttemptRef(context.Background(), 1); got != "" {
		t.Errorf("AttemptRef without a span = %q, want \"\"", got)
	}
	// the worker's own context holds a span: a ref that does not parse must not link to it
	inWorker, worker := tr.Start(context.Background(), "worker", trace.SpanKindInternal)
	defer worker.End()
	for _, c := range []struct {
		ref   string
		links int
	}{
		{ref, 1}, {"", 0}, {"4", 0}, {"x " + ref[2:], 0}, {"4 00-zz", 0}, {"4 00-00000000000000000000000000000000-0000000000000000-01", 0},
	} {
		_, span := tr.StartAttempt(inWorker, nil, c.ref, "process q", trace.SpanKindConsumer)
		span.End()
		ended := rec.Ended()
		links := ended[len(ended)-1].Links()
		if len(links) != c.links {
			t.Errorf("previous %q: %d links, want %d", c.ref, len(links), c.links)
			continue
		}
		if c.links == 1 && (links[0].SpanContext.SpanID() != failed.SpanContext().SpanID() || links[0].Attributes[0] != DeliveryCount.Int(4)) {
			t.Errorf("previous %q: link %+v, want the failed attempt's span, delivery 4", c.ref, links[0])
		}
	}
}

// With links instead of children (Config.TraceLinks), a retry's span starts a trace of its own and
// links to both the producer's span and the failed attempt's.
func TestAttemptLinksInLinkMode(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), true)
	pctx, producer := tr.Start(context.Background(), "publish q", trace.SpanKindProducer)
	stored := Inject(pctx, nil)
	producer.End()
	actx, failed := tr.StartFrom(context.Background(), stored, "process q", trace.SpanKindConsumer)
	ref := tr.AttemptRef(actx, 1)
	failed.End()
	_, retry := tr.StartAttempt(context.Background(), stored, ref, "process q", trace.SpanKindConsumer)
	retry.End()
	if retry.SpanContext().TraceID() == producer.SpanContext().TraceID() {
		t.Fatal("the retry is in the producer's trace, want a trace of its own")
	}
	ended := rec.Ended()
	var linked []trace.SpanID
	for _, l := range ended[len(ended)-1].Links() {
		linked = append(linked, l.SpanContext.SpanID())
	}
	if len(linked) != 2 || linked[0] != failed.SpanContext().SpanID() || linked[1] != producer.SpanContext().SpanID() {
		t.Errorf("the retry links to %v, want the failed attempt %v and the producer %v", linked, failed.SpanContext().SpanID(), producer.SpanContext().SpanID())
	}
}
