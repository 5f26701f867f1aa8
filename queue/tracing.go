package queue

import (
	"context"
	"maps"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
)

// A traced publish stores the W3C trace context of its PRODUCER span in the job's attributes under
// these keys (docs/tracing.md): a consumer of any language reads them back from the delivery's
// attributes. They do not count against MaxAttributes.
const (
	AttributeTraceParent = tracing.TraceParent
	AttributeTraceState  = tracing.TraceState
)

// AttributePreviousAttempt is the attribute a job shows once a traced nack has failed one of its
// deliveries: that attempt's delivery number and the traceparent of its span, as
// "<delivery> <traceparent>" (Client.Nack). The next delivery's span links to it, and a consumer
// of any language can link its own span to it. It is kept in the job's record, not among the
// attributes it was published with, and, like the trace context, does not count against
// MaxAttributes.
const AttributePreviousAttempt = "sluice.previous_attempt"

// startPublish starts the PRODUCER span of a publish of n jobs to queue q of namespace ns and
// returns attrs with its trace context added (a copy: the caller's map is never changed). With
// tracing off it returns ctx, a nil span and attrs as they were.
func (c *Client) startPublish(ctx context.Context, ns, q string, n int) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		tracing.SystemName, tracing.Destination.String(q), tracing.Namespace.String(ns),
		tracing.OperationType.String("send"), tracing.OperationName.String("publish"),
	}
	if n > 1 {
		attrs = append(attrs, attribute.Int("messaging.batch.message_count", n))
	}
	return c.tracer.Start(ctx, "publish "+q, trace.SpanKindProducer, attrs...)
}

// withTraceContext returns attrs with the trace context of ctx's span added, as a copy; attrs
// itself when span is nil (tracing off).
func withTraceContext(ctx context.Context, span trace.Span, attrs map[string]string) map[string]string {
	if span == nil {
		return attrs
	}
	out := make(map[string]string, len(attrs)+2)
	maps.Copy(out, attrs)
	return tracing.Inject(ctx, out)
}

// traceKeys is how many of a's keys hold a trace context or a previous attempt's span.
func traceKeys(a map[string]string) int {
	n := 0
	for _, k := range [...]string{AttributeTraceParent, AttributeTraceState, AttributePreviousAttempt} {
		if _, ok := a[k]; ok {
			n++
		}
	}
	return n
}

// startProcess starts the CONSUMER span of one delivery, the child of (or, with Config.TraceLinks,
// linked to) the PRODUCER span whose context the job carries, and linked to the span of the last
// failed attempt when the job has one (Client.Nack). Tracing off: ctx and a nil span.
func (w *worker) startProcess(ctx context.Context, j *heldJob) (context.Context, trace.Span) {
	d := &j.d
	if w.client.tracer == nil {
		return ctx, nil
	}
	return w.client.tracer.StartAttempt(ctx, tracing.Carrier(d.Attributes), d.Attributes[AttributePreviousAttempt], "process "+d.Queue, trace.SpanKindConsumer,
		tracing.SystemName, tracing.Destination.String(d.Queue), tracing.Namespace.String(d.Namespace),
		tracing.OperationType.String("process"), tracing.OperationName.String("process"),
		tracing.MessageID.String(d.ID), tracing.DeliveryCount.Int(d.Delivery),
		tracing.BodySize.Int(len(d.Payload)), tracing.WaitMs.Int64(d.Elapsed.Milliseconds()),
		tracing.LeaseMs.Int64(j.lease.Milliseconds()))
}

// traceReceived records a CONSUMER span per job of *ds that a Consume call started at start leased
// (tracing.Tracer.Received); the call's own span, if ctx has one, is the HTTP consume's.
func (c *Client) traceReceived(ctx context.Context, start time.Time, ds *[]Delivery) {
	for i := range *ds {
		d := &(*ds)[i]
		c.tracer.Received(ctx, tracing.Carrier(d.Attributes), d.Attributes[AttributePreviousAttempt], "receive "+d.Queue,
			start, tracing.SystemName, tracing.Destination.String(d.Queue), tracing.Namespace.String(d.Namespace),
			tracing.OperationType.String("receive"), tracing.OperationName.String("receive"),
			tracing.MessageID.String(d.ID), tracing.DeliveryCount.Int(d.Delivery),
			tracing.BodySize.Int(len(d.Payload)), tracing.WaitMs.Int64(d.Elapsed.Milliseconds()),
			tracing.LeaseMs.Int64(time.Until(d.LeaseUntil).Milliseconds()))
	}
}

// nackOutcomes names each NackOutcome as a span's outcome.
var nackOutcomes = map[NackOutcome]string{
	NackRetried: tracing.OutcomeRetry, NackDead: tracing.OutcomeDead, NackExpired: tracing.OutcomeExpired,
}
