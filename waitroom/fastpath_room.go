package waitroom

import "net/http"

// ServeLean serves, on the lean loop, the requests Proxy's middleware lets through without
// writing anything of its own: a request its bypass rules match, and an admitted visitor's
// request (a valid pass, its keep-alive not due or confirmed by Redis). Everything else (a
// status poll, a visitor with no pass or an invalid one, a pass Redis no longer holds, a room
// gone) is net/http's, which decides it from the start. Such a request's pass is checked twice:
// the lean loop takes its count of a refused pass back, and a keep-alive that Redis refused is
// asked again (once more a refusal, or the place a visitor gets back when one was freed).
func (m *middleware) ServeLean(w http.ResponseWriter, r *http.Request) bool {
	if _, ok := m.next.(*proxy); !ok {
		return false // only the room's own proxy is served here
	}
	room := m.room
	if room.bypassed(r, r.URL.Path) {
		m.next.ServeHTTP(w, r)
		return true
	}
	if r.Header.Get(PollHeader) != "" {
		return false
	}
	if _, ok := cookieValue(r, room.passCookieName); !ok {
		return false
	}
	p, ok := room.requestPass(r)
	if !ok {
		room.passRejected.Add(^uint64(0)) // net/http's middleware counts it
		return false
	}
	held, pass, exp, err := room.touch(r.Context(), p.Visitor, p.Binding)
	if err != nil || !held {
		room.passAccepted.Add(^uint64(0)) // net/http's middleware counts it
		return false
	}
	if pass != "" {
		room.c.setPass(w, r, room.name, pass, exp)
	}
	m.serve(w, r, p.Visitor)
	return true
}

// ServeLean serves every request the lean parser took, but those for an https upstream (which
// http.Transport speaks HTTP/2 to).
func (p *upstreamProxy) ServeLean(w http.ResponseWriter, r *http.Request) bool {
	if !p.lean {
		return false
	}
	p.ServeHTTP(w, r)
	return true
}
