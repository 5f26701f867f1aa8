package server

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/jaegertest"
	"github.com/sluicehq/sluice/waitroom"
)

// A waiting room's admission decisions are events on the request's span: a browser new to the
// room is given its visitor cookie (entering), then the first is admitted and the second waits
// first in line.
func TestTraceRoomAdmissionEvents(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	ts := tracedServer(t, j)
	r := ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 1, "queue_timeout": 60})
	wantStatus(t, r, http.StatusCreated, "")

	for _, want := range []struct{ decision, position string }{{"admitted", "0"}, {"waiting", "1"}} {
		header, traceID, spanID := newTraceparent()
		r := newVisitor(t).do(t, http.MethodGet, ts.PublicURL+"/v1/rooms/shop/status", map[string]string{"traceparent": header})
		var st roomStatus
		if r.JSON(t, &st); st.State != want.decision {
			t.Fatalf("visitor is %q, want %q", st.State, want.decision)
		}
		spans := j.WaitTrace(t, traceID, "the two status requests' spans", func(s []jaegertest.Span) bool { return len(s) == 2 })
		var decisions []string
		for _, s := range spans {
			ev, ok := s.Event(waitroom.AdmissionEvent)
			if !ok || s.Parent() != spanID || s.Tag("span.kind") != "server" {
				t.Fatalf("span %+v is not a server span under the caller's with an admission event", s)
			}
			if ev["sluice.waitroom.room"] != "shop" || ev["sluice.waitroom.max_active"] != "1" && ev["sluice.waitroom.decision"] != "entering" {
				t.Errorf("admission event %v is not of room shop with max_active 1", ev)
			}
			if ev["sluice.waitroom.decision"] == want.decision && ev["sluice.waitroom.position"] != want.position {
				t.Errorf("admission event %v: position %s, want %s", ev, ev["sluice.waitroom.position"], want.position)
			}
			decisions = append(decisions, ev["sluice.waitroom.decision"])
		}
		if !sameSet(decisions, []string{"entering", want.decision}) {
			t.Errorf("decisions %v, want entering then %s", decisions, want.decision)
		}
	}
}

// sameSet reports whether a and b hold the same two strings in any order.
func sameSet(a, b []string) bool {
	return len(a) == 2 && len(b) == 2 && (a[0] == b[0] && a[1] == b[1] || a[0] == b[1] && a[1] == b[0])
}
