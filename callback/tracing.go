package callback

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/queue"
)

// A deliverer traces when its queue client does (queue.Config.TracerProvider): each try is a
// CLIENT span, the child of (or linked to) the span that published the callback job, and the
// receiver gets its traceparent header (docs/tracing.md).

// startCall starts the CLIENT span of one try of job and returns header with its traceparent.
// Tracing off: ctx, a nil span and header itself.
func (d *Deliverer) startCall(ctx context.Context, job *queue.CallbackJob, header http.Header) (context.Context, trace.Span, http.Header) {
	if d.tracer == nil {
		return ctx, nil, header
	}
	return d.tracer.StartCall(ctx, tracing.Carrier(job.Attributes), job.Attributes[queue.AttributePreviousAttempt], "callback "+job.Queue, header,
		tracing.SystemName, tracing.Destination.String(job.Queue), tracing.Namespace.String(job.Namespace),
		tracing.OperationType.String("process"), tracing.OperationName.String("callback"),
		tracing.MessageID.String(job.ID), tracing.DeliveryCount.Int(job.Delivery.Delivery),
		tracing.WaitMs.Int64(job.LeasedAt.Sub(job.DueAt).Milliseconds()),
		attribute.String("http.request.method", job.Callback.Method), attribute.String("url.full", job.Callback.URL))
}

// tryOutcomes names the outcome of a try as a span's outcome.
var tryOutcomes = map[outbound.Outcome]string{
	outbound.Success: tracing.OutcomeAck, outbound.Retry: tracing.OutcomeRetry, outbound.Final: tracing.OutcomeDead,
}
