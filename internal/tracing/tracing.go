// Package tracing is the one place Sluice's libraries speak OpenTelemetry: it starts their spans
// with the messaging semantic conventions and carries the W3C trace context (traceparent,
// tracestate) in the work they store. It imports only the OpenTelemetry API, never the SDK or an
// exporter, so a library user who does not trace links two small modules and pays nothing at run
// time: a nil *Tracer (no TracerProvider configured) starts no span and writes no field.
package tracing

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The names of the trace context fields stored with a job, a task or sent in an HTTP header
// (W3C Trace Context).
const (
	TraceParent = "traceparent"
	TraceState  = "tracestate"
)

// InstrumentationName names Sluice's tracers.
const InstrumentationName = "github.com/sluicehq/sluice"

// Attribute keys: OpenTelemetry's messaging conventions, and Sluice's own under messaging.sluice.
const (
	System        attribute.Key = "messaging.system"
	Destination   attribute.Key = "messaging.destination.name"
	OperationType attribute.Key = "messaging.operation.type"
	OperationName attribute.Key = "messaging.operation.name"
	MessageID     attribute.Key = "messaging.message.id"
	BodySize      attribute.Key = "messaging.message.body.size"
	Namespace     attribute.Key = "messaging.sluice.namespace"
	DeliveryCount attribute.Key = "messaging.sluice.delivery_count"
	Outcome       attribute.Key = "messaging.sluice.outcome"
	WaitMs        attribute.Key = "messaging.sluice.wait_ms"
	LeaseMs       attribute.Key = "messaging.sluice.lease_ms"
	// LinkKind says what a link of a delivery's span points to: "previous_attempt".
	LinkKind attribute.Key = "messaging.sluice.link"
)

// SystemName is the messaging.system of every Sluice span.
var SystemName = System.String("sluice")

// The outcomes of a delivery (the Outcome attribute).
const (
	OutcomeAck     = "ack"
	OutcomeRetry   = "retry"
	OutcomeDead    = "dead"
	OutcomeExpired = "expired"
	OutcomeRelease = "release"
	OutcomeLost    = "lost"
)

// propagator reads and writes W3C Trace Context.
var propagator = propagation.TraceContext{}

// Tracer starts a library's spans. The nil *Tracer is tracing off: every method is a cheap no-op.
type Tracer struct {
	t trace.Tracer
	// link makes a delivery's span the root of a new trace linked to the producer's span instead of
	// its child.
	link bool
}

// New returns the tracer of tp, or nil (tracing off) when tp is nil. link chooses how a
// consumer's span relates to the span that produced its work (see Tracer.link).
func New(tp trace.TracerProvider, link bool) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{t: tp.Tracer(InstrumentationName), link: link}
}

// Start starts a span of kind on ctx, or returns ctx and a nil span when t is nil.
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	return t.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// StartFrom starts the span of work (a delivery, a dispatch) that a producer stored with carrier:
// its child, or with link, a new trace that links to it. ctx is the consumer's own context.
func (t *Tracer) StartFrom(ctx context.Context, carrier Carrier, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return t.StartAttempt(ctx, carrier, "", name, kind, attrs...)
}

// StartAttempt is StartFrom for one attempt of work that may have been tried before: previous is
// what the last failed attempt left with the work (AttemptRef), and the span links to that
// attempt's span, so a trace leads from each retry to the try before it. "" links nothing.
func (t *Tracer) StartAttempt(ctx context.Context, carrier Carrier, previous, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(attrs...)}
	ctx, opts = t.fromProducer(ctx, carrier, withPrevious(ctx, opts, previous)...)
	return t.t.Start(ctx, name, opts...)
}

// AttemptRef is what a failed attempt leaves with its work for the next attempt's span to link
// to (StartAttempt): the attempt's delivery number and the W3C traceparent of ctx's span, as
// "<delivery> <traceparent>" (about 60 bytes). "" when t is nil (tracing off) or ctx has no span,
// so that nothing is stored then.
func (t *Tracer) AttemptRef(ctx context.Context, delivery int) string {
	if t == nil {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return strconv.Itoa(delivery) + " 00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// withPrevious returns opts with a link to the attempt that ref (AttemptRef) names, carrying its
// delivery number; opts as they were when ref is "" or does not parse (a stored value is never
// trusted to be well formed).
func withPrevious(ctx context.Context, opts []trace.SpanStartOption, ref string) []trace.SpanStartOption {
	delivery, parent, ok := strings.Cut(ref, " ")
	if !ok {
		return opts
	}
	n, err := strconv.Atoi(delivery)
	// ctx's values without its span: a ref that does not parse must not read as ctx's own span.
	bare := trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	sc := trace.SpanContextFromContext(propagator.Extract(bare, Carrier{TraceParent: parent}))
	if err != nil || !sc.IsValid() {
		return opts
	}
	return append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
		DeliveryCount.Int(n), LinkKind.String("previous_attempt"),
	}}))
}

// fromProducer places a span of work whose producer stored carrier: ctx made the producer's
// child, or opts given a new root and a link to it (Tracer.link). Without a stored context, ctx
// and opts as they were.
func (t *Tracer) fromProducer(ctx context.Context, carrier Carrier, opts ...trace.SpanStartOption) (context.Context, []trace.SpanStartOption) {
	producer := trace.SpanContextFromContext(propagator.Extract(context.Background(), carrier))
	switch {
	case !producer.IsValid():
	case t.link:
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: producer}))
	default:
		ctx = trace.ContextWithRemoteSpanContext(ctx, producer)
	}
	return ctx, opts
}

// Received records the CONSUMER span of one piece of work a pull consume handed out (a job that
// Client.Consume, and so the HTTP consume routes, leased), from start to now. It goes in the
// producer's trace as StartFrom places it, linked to the span of the consume call in ctx, so
// that both traces lead to each other; work that carries no trace context is the call's child.
// previous links it to the last failed attempt, as StartAttempt does.
func (t *Tracer) Received(ctx context.Context, carrier Carrier, previous, name string, start time.Time, attrs ...attribute.KeyValue) {
	if t == nil {
		return
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...), trace.WithTimestamp(start)}
	opts = withPrevious(ctx, opts, previous)
	parent := ctx
	if _, stored := carrier[TraceParent]; stored {
		if call := trace.SpanContextFromContext(ctx); call.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: call}))
		}
		// ctx's values, not its span: the work's span belongs to the producer's trace.
		parent = trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	}
	parent, opts = t.fromProducer(parent, carrier, opts...)
	_, span := t.t.Start(parent, name, opts...)
	span.End()
}

// End ends span (nil: nothing), marking it failed with err when err is not nil.
func End(span trace.Span, err error, attrs ...attribute.KeyValue) {
	if span == nil {
		return
	}
	span.SetAttributes(attrs...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// EndOutcome ends the span of a delivery or a call with the outcome of the work (an Outcome*
// constant). A nil span (tracing off) returns before any attribute is built, so the off path
// allocates nothing: a variadic End call would build its slice on the heap every time.
func EndOutcome(span trace.Span, err error, outcome string) {
	if span == nil {
		return
	}
	End(span, err, Outcome.String(outcome))
}

// Recording is ctx's span when it records (a sampled span of the caller's, such as an HTTP
// server's), else nil: a library adds events to it only then, so that nobody builds an event's
// attributes that no one will see.
func Recording(ctx context.Context) trace.Span {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		return span
	}
	return nil
}

// Carrier is a string map that holds a trace context: a job's attributes, a task's headers.
type Carrier = propagation.MapCarrier

// Inject writes the trace context of ctx's span into into (allocating it when nil) and returns
// it; with no valid span in ctx it writes nothing and returns into as it was.
func Inject(ctx context.Context, into map[string]string) map[string]string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return into
	}
	if into == nil {
		into = make(map[string]string, 2)
	}
	propagator.Inject(ctx, propagation.MapCarrier(into))
	return into
}

// FromHeader returns ctx carrying the remote span context of an incoming request's traceparent
// and tracestate headers, or ctx itself when there is none (or it does not parse).
func FromHeader(ctx context.Context, h propagation.TextMapCarrier) context.Context {
	return propagator.Extract(ctx, h)
}

// ToHeader writes the trace context of ctx's span into an outgoing request's headers.
func ToHeader(ctx context.Context, h propagation.TextMapCarrier) {
	propagator.Inject(ctx, h)
}

// StartCall starts the CLIENT span of an outbound HTTP call made for work whose producer stored
// carrier (see StartFrom), linked to the failed try before it that previous names (StartAttempt;
// "" for none), and returns header cloned with the span's traceparent, for the receiver.
// Tracing off: ctx, a nil span and header itself.
func (t *Tracer) StartCall(ctx context.Context, carrier Carrier, previous, name string, header http.Header, attrs ...attribute.KeyValue) (context.Context, trace.Span, http.Header) {
	if t == nil {
		return ctx, nil, header
	}
	ctx, span := t.StartAttempt(ctx, carrier, previous, name, trace.SpanKindClient, attrs...)
	out := header.Clone()
	if out == nil {
		out = http.Header{}
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(out))
	return ctx, span, out
}

// EndCall ends the CLIENT span of a call (nil: nothing) with the answer's status and the outcome.
// Tracing off allocates nothing (see EndOutcome).
func EndCall(span trace.Span, status int, err error, outcome string) {
	if span == nil {
		return
	}
	End(span, err, attribute.Int("http.response.status_code", status), Outcome.String(outcome))
}

// HeaderContext is the trace context a stored request header holds (traceparent, tracestate).
func HeaderContext(h http.Header) Carrier {
	c := Carrier{}
	for _, k := range [...]string{TraceParent, TraceState} {
		if v := h.Get(k); v != "" {
			c[k] = v
		}
	}
	return c
}
