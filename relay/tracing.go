package relay

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
)

// A traced submit stores the W3C trace context of its PRODUCER span as the task's traceparent and
// tracestate headers; the dispatch replaces them with its CLIENT span's, so the endpoint receives
// the trace (docs/tracing.md).

// startSubmit starts the PRODUCER span of a submit to endpoint, or returns ctx and nil with
// tracing off.
func (c *Client) startSubmit(ctx context.Context, endpoint string) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, nil
	}
	return c.tracer.Start(ctx, "submit "+endpoint, trace.SpanKindProducer, tracing.SystemName,
		tracing.Destination.String(endpoint), tracing.OperationType.String("send"), tracing.OperationName.String("submit"))
}

// tracedHeader is the encoded header of a task submitted with h, with the trace context of ctx's
// span added.
func tracedHeader(ctx context.Context, h http.Header) (string, error) {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	tracing.ToHeader(ctx, propagation.HeaderCarrier(out))
	b, err := json.Marshal(out)
	return string(b), err
}

// startCall starts the CLIENT span of j's call, the child of (with Config.TraceLinks, linked to)
// the submit's span, and sets the call's traceparent to it. Tracing off: ctx and a nil span.
func (d *Dispatcher) startCall(ctx context.Context, j *dispatchJob) (context.Context, trace.Span) {
	if d.c.tracer == nil {
		return ctx, nil
	}
	var span trace.Span
	ctx, span, j.req.Header = d.c.tracer.StartCall(ctx, tracing.HeaderContext(j.req.Header), "", "dispatch "+j.endpoint.Name, j.req.Header,
		tracing.SystemName, tracing.Destination.String(j.endpoint.Name), tracing.OperationType.String("process"),
		tracing.OperationName.String("dispatch"), tracing.MessageID.String(j.id), tracing.DeliveryCount.Int(j.attempt),
		attribute.String("http.request.method", j.req.Method), attribute.String("url.full", j.req.URL))
	return ctx, span
}

// callOutcomes names a call's outcome code (finish.lua's) as a span's outcome.
var callOutcomes = map[string]string{"ok": tracing.OutcomeAck, "retry": tracing.OutcomeRetry, "fail": tracing.OutcomeDead}
