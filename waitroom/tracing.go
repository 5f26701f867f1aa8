package waitroom

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
)

// AdmissionEvent is the name of the span event each admission decision adds to the request's
// span (docs/tracing.md): the room needs no TracerProvider of its own, since the decision belongs
// to the request that asked for it, whose span an HTTP server's tracing (or Sluice's server) made.
const AdmissionEvent = "waitroom.admission"

// The attributes of an AdmissionEvent.
const (
	attrRoom      attribute.Key = "sluice.waitroom.room"
	attrDecision  attribute.Key = "sluice.waitroom.decision"
	attrPosition  attribute.Key = "sluice.waitroom.position"
	attrLength    attribute.Key = "sluice.waitroom.length"
	attrActive    attribute.Key = "sluice.waitroom.active"
	attrMaxActive attribute.Key = "sluice.waitroom.max_active"
	attrWaitedMs  attribute.Key = "sluice.waitroom.waited_ms"
	attrDegraded  attribute.Key = "sluice.waitroom.degraded"
)

// arrive is decideArrival with the decision recorded as an event on ctx's span.
func (r *Room) arrive(ctx context.Context, visitor string, e entry) (Status, error) {
	st, err := r.decideArrival(ctx, visitor, e)
	if err == nil {
		admissionEvent(ctx, st)
	}
	return st, err
}

// admissionEvent adds st's decision to ctx's span when it records; else it does nothing (and
// allocates nothing). The visitor id is left out: it is a person's pseudonym, and a trace backend
// keeps it longer than the room does.
func admissionEvent(ctx context.Context, st Status) {
	span := tracing.Recording(ctx)
	if span == nil {
		return
	}
	span.AddEvent(AdmissionEvent, trace.WithAttributes(
		attrRoom.String(st.Room), attrDecision.String(st.State.String()),
		attrPosition.Int(st.Position), attrLength.Int(st.Length),
		attrActive.Int(st.Active), attrMaxActive.Int(st.MaxActive),
		attrWaitedMs.Int64(st.Waited.Milliseconds()), attrDegraded.Bool(st.Degraded)))
}
