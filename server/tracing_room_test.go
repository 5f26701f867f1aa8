package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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

// With proxy_rooms, a request the public listener's lean loop serves (an admitted visitor's) has
// its SERVER span as a request net/http serves does, and a request the lean loop offers to the
// room and hands to net/http (a visitor with no pass) has one span, not two.
func TestTraceRoomProxyLeanRequests(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(app.Close)
	ts := newTestServer(t, func(c *Config) {
		c.Tracing = TracingConfig{Endpoint: "http://" + j.OTLP, ServiceName: "sluice-" + t.Name()}
		c.ProxyRooms = "*=shop"
	})
	wantStatus(t, ts.adminDo(t, http.MethodPut, "/v1/rooms/shop", map[string]any{"max_active": 1, "upstream": app.URL}), http.StatusCreated, "")
	cookie := admittedCookie(t, ts)
	header, traceID, spanID := newTraceparent()
	lean := ts.srv.leanStats()
	page := func(path string) {
		t.Helper()
		if r := sendWith(t, freshClient(t), http.MethodGet, ts.PublicURL+path, map[string]string{"Cookie": cookie, "traceparent": header}, nil); r.Status != http.StatusOK {
			t.Fatalf("admitted visitor's %s: %d", path, r.Status)
		}
	}
	page("/page")
	// A second visitor waits (max_active 1): two requests (its cookie, then its place in line).
	second := newVisitor(t)
	second.c.Transport = freshClient(t).Transport // a new connection: the lean loop sees its requests first
	if r := second.do(t, http.MethodGet, ts.PublicURL+"/page", map[string]string{"traceparent": header}); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("second visitor: %d", r.Status)
	}
	page("/last") // ended after the others: when its span is in, theirs are too
	if st := ts.srv.leanStats(); st.LeanRequests-lean.LeanRequests != 2 || st.HandedOff == lean.HandedOff {
		t.Fatalf("the lean loop served %d requests and handed off %d connections, want the admitted visitor's 2 and the second visitor's",
			st.LeanRequests-lean.LeanRequests, st.HandedOff-lean.HandedOff)
	}
	spans := j.WaitTrace(t, traceID, "the last request's span", func(s []jaegertest.Span) bool {
		return slices.ContainsFunc(s, func(s jaegertest.Span) bool { return s.Tag("url.path") == "/last" })
	})
	var codes []string
	for _, s := range spans {
		if s.Parent() != spanID || s.Tag("span.kind") != "server" {
			t.Fatalf("span %+v is not a server span under the caller's", s)
		}
		codes = append(codes, s.Tag("url.path")+" "+s.Tag("http.response.status_code"))
	}
	slices.Sort(codes)
	if want := []string{"/last 200", "/page 200", "/page 503", "/page 503"}; !slices.Equal(codes, want) {
		t.Fatalf("spans %q, want %q (one per request)", codes, want)
	}
}
