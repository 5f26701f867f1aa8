package waitroom

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
)

// PollHeader marks the waiting page's status polls: the middleware answers them with the status
// as JSON instead of passing them on.
const PollHeader = "Sluice-Room-Poll"

// ReleaseHeader is the response header by which an upstream (or the next handler) frees the
// visitor's slot: "Sluice-Room: release". The middleware removes it from the response.
const ReleaseHeader = "Sluice-Room"

// Middleware puts room in front of next (deployment b): a request with a valid pass goes through
// without a Redis call (a slot keep-alive at most every Config.TouchInterval per visitor); any
// other request is an arrival: admitted ones go through with a new pass, the others get the
// waiting page (503 with Retry-After), or the status as JSON with Accept: application/json. The
// waiting page polls the same URL with the PollHeader. A response with "Sluice-Room: release"
// frees the visitor's slot, and the browser's requests of the next Config.LeftWindow are answered
// as "left" instead of putting it in line again. An asset request (isAsset) without a pass gets a
// 503 and never puts anyone in line. A request the room's BypassRules match goes through as it
// is, without a Redis call.
//
// A room that does not exist (deleted) lets every request through: deleting a room turns the
// waiting room off.
func Middleware(room *Room, next http.Handler) http.Handler {
	return &middleware{room: room, next: next}
}

type middleware struct {
	room *Room
	next http.Handler
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	room, c := m.room, m.room.c
	if room.bypassed(r, r.URL.Path) {
		m.next.ServeHTTP(w, r)
		return
	}
	ctx := r.Context()
	poll := r.Header.Get(PollHeader) != ""
	if p, ok := room.requestPass(r); ok {
		held, pass, exp, err := room.touch(ctx, p.Visitor, p.Binding)
		if m.handleError(w, r, err) {
			return
		}
		if held {
			if pass != "" {
				c.setPass(w, r, room.name, pass, exp)
			}
			m.admit(w, r, poll, Status{Room: room.name, Visitor: p.Visitor, State: Admitted})
			return
		}
		c.clearPass(w, r, room.name)
	}
	if isAsset(r, r.URL.Path) {
		c.notAdmittedAsset(w)
		return
	}
	if !poll && c.switchLanguage(w, r, safeNext(r.URL.RequestURI())) {
		return
	}
	self := safeNext(r.URL.RequestURI()) // the page leads here once admitted: never off the site
	st := Status{Room: room.name, State: Left}
	if !c.hasLeft(r, room.name) {
		var pollLimited bool
		var err error
		st, pollLimited, err = c.admission(w, r, room)
		if m.handleError(w, r, err) {
			return
		}
		if pollLimited {
			if poll || wantsJSON(r) {
				WriteError(w, r, tooManyPolls(w, st.RetryAfter))
				return
			}
			retryAfter(w, st.RetryAfter)
			c.renderPage(w, r, room, http.StatusTooManyRequests, Status{Room: room.name}, "limited", self, self, self)
			return
		}
		if st.State == Admitted {
			if st.Pass != "" {
				c.setPass(w, r, room.name, st.Pass, st.PassExpires)
				// The admitting request carries its new pass on, so that a site checking passes
				// itself (token passes) admits it as it will the browser's next ones.
				forwardPass(r, room.passCookieName, st.Pass)
			}
			m.admit(w, r, poll, st)
			return
		}
	}
	w.Header().Set(ReleaseHeader, "waiting")
	if poll {
		writeJSON(w, http.StatusOK, c.statusJSON(st))
		return
	}
	retryAfter(w, cmp.Or(st.RetryAfter, c.cfg.PollInterval))
	code := statusCode(st, http.StatusServiceUnavailable)
	if wantsJSON(r) {
		writeJSON(w, code, c.statusJSON(st))
		return
	}
	c.renderPage(w, r, room, code, st, st.State.String(), self, self, self)
}

// handleError handles an error of Touch or Arrive and reports whether there was one: a room that
// no longer exists lets the request through; any other error means the request ended.
func (m *middleware) handleError(w http.ResponseWriter, r *http.Request, err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrRoomNotFound) {
		m.next.ServeHTTP(w, r)
	}
	return true
}

// admit answers an admitted visitor: a poll gets the status st, any other request is served.
func (m *middleware) admit(w http.ResponseWriter, r *http.Request, poll bool, st Status) {
	if poll {
		writeJSON(w, http.StatusOK, m.room.c.statusJSON(st))
		return
	}
	m.serve(w, r, st.Visitor)
}

// serve passes an admitted request on, watching the response for the release header.
func (m *middleware) serve(w http.ResponseWriter, r *http.Request, visitor string) {
	rw := &releaseWriter{ResponseWriter: w, m: m, r: r, visitor: visitor}
	m.next.ServeHTTP(rw, r)
}

// releaseWriter frees the visitor's slot when the response carries "Sluice-Room: release".
type releaseWriter struct {
	http.ResponseWriter
	m       *middleware
	r       *http.Request
	visitor string
	wrote   bool
}

func (w *releaseWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		h := w.Header()
		if h.Get(ReleaseHeader) == "release" {
			h.Del(ReleaseHeader)
			room := w.m.room
			room.c.clearPass(w.ResponseWriter, w.r, room.name)
			room.c.setLeft(w.ResponseWriter, w.r, room.name, w.visitor)
			// The release must happen even if the client goes away now.
			if _, err := room.Release(context.WithoutCancel(w.r.Context()), w.visitor); err != nil {
				room.c.cfg.Logger.WarnContext(w.r.Context(), "waitroom: release on the upstream's header failed",
					"room", room.name, "error", err)
			}
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *releaseWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (Flush, deadlines).
func (w *releaseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Proxy is deployment a: the room in front of a reverse proxy to the room's Upstream (read from
// its settings at each request, so a change of upstream applies at once). The upstream frees a
// slot with the "Sluice-Room: release" response header. The handler is also a LeanHandler: a
// ProxyServer, or a NewLeanServer whose handler routes to it, serves the requests of admitted
// visitors on its lean loop.
func Proxy(room *Room) http.Handler {
	p := &proxy{room: room}
	return Middleware(room, p)
}

type proxy struct {
	room *Room
	// current is the upstream in use, read without a lock on every request; mu orders changes.
	current atomic.Pointer[currentUpstream]
	mu      sync.Mutex
}

type currentUpstream struct {
	url string
	up  *upstreamProxy
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st, err := p.room.cached(r.Context())
	if err != nil {
		WriteError(w, r, err)
		return
	}
	up, err := p.upstream(st.cfg.Upstream)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	up.ServeHTTP(w, r)
}

// upstream returns the proxy to the room's current upstream; a change of upstream closes the
// previous one's idle connections (and its busy ones once their requests end).
func (p *proxy) upstream(upstream string) (*upstreamProxy, error) {
	if cur := p.current.Load(); cur != nil && cur.url == upstream {
		return cur.up, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	prev := p.current.Load()
	if prev != nil && prev.url == upstream {
		return prev.up, nil
	}
	if upstream == "" {
		return nil, &HTTPError{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable,
			Message: "room " + p.room.name + " has no upstream to proxy to"}
	}
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, &HTTPError{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable, Message: "room upstream: " + err.Error()}
	}
	cfg := p.room.c.cfg
	if prev != nil {
		prev.up.close()
	}
	up := newUpstreamProxy(u, upstreamProxyConfig{
		DialTimeout:   cfg.UpstreamDialTimeout,
		HeaderTimeout: cfg.UpstreamHeaderTimeout,
		Fail: func(w http.ResponseWriter, r *http.Request, err error) {
			cfg.Logger.WarnContext(r.Context(), "waitroom: upstream failed", "room", p.room.name, "error", err)
			WriteError(w, r, &HTTPError{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable, Message: "the upstream could not be reached"})
		},
	})
	p.current.Store(&currentUpstream{url: upstream, up: up})
	return up, nil
}
