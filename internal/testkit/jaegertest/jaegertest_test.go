package jaegertest_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/jaegertest"
)

// A span exported to the harness's Jaeger is read back through its query API, with its service.
// `make test` runs this test first, alone, with a long timeout: on a fresh machine it builds
// Jaeger once into the user's cache.
func TestJaegerRoundTrip(t *testing.T) {
	j := jaegertest.Start(t)
	tp := j.TracerProvider(t, "jaegertest")
	_, span := tp.Tracer("test").Start(context.Background(), "hello")
	span.End()
	id := span.SpanContext().TraceID().String()
	spans := j.WaitTrace(t, id, "the span", func(s []jaegertest.Span) bool { return len(s) == 1 })
	if spans[0].OperationName != "hello" || spans[0].Service != "jaegertest" || spans[0].SpanID != span.SpanContext().SpanID().String() {
		t.Errorf("read back %+v", spans[0])
	}
	if got := j.Trace(t, "0123456789abcdef0123456789abcdef"); len(got) != 0 {
		t.Errorf("an unknown trace reads back %d spans", len(got))
	}
}
