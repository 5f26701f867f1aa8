package tracing

import (
	"context"
	"errors"
	"net/http"
	"testing"
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
	allocs := testing.AllocsPerRun(100, func() {
		c, span := off.StartFrom(ctx, stored, "process q", 0)
		EndOutcome(span, failed, OutcomeRetry)
		_, span, h := off.StartCall(c, nil, "dispatch e", header)
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
