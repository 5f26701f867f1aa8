package server

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/waitroom"
)

// The public listener serves proxy_rooms (rooms.API.MountProxies) on the waiting room's lean loop
// (waitroom.NewLeanServer): an admitted visitor's keep-alive requests through a room's reverse
// proxy skip net/http's server, which costs more CPU than the room itself. Each connection starts
// in the lean loop; a request the mux routes to a room's proxy, and that the proxy serves on the
// lean loop (an admitted visitor's, a bypassed one), goes through the same steps as wrap gives a
// room proxy's request on net/http: its id, the per-write deadline, the body limit, panic
// recovery, the request metrics and access log, and with tracing on its SERVER span. Any other
// request (the API, a status poll, a visitor still waiting) hands its connection
// to net/http and s.public, which serves it and the rest of the connection. Without proxy_rooms
// the listener is net/http's alone.

// httpServer is what Serve runs on a listener: an *http.Server or a *waitroom.ProxyServer.
type httpServer interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
	Close() error
}

// publicServer returns the server of the public listener, configured as hs.
func (s *Server) publicServer(hs *http.Server) httpServer {
	if s.publicLean == nil {
		return hs
	}
	ps := waitroom.NewLeanServer(s.publicLean, hs)
	s.leanServer.Store(ps)
	return ps
}

// leanStats counts the lean loop's requests and hand-offs (zeros without proxy_rooms).
func (s *Server) leanStats() waitroom.ProxyServerStats {
	if ps := s.leanServer.Load(); ps != nil {
		return ps.Stats()
	}
	return waitroom.ProxyServerStats{}
}

// roomProxy is a room's proxy (waitroom.Proxy's handler).
type roomProxy interface {
	http.Handler
	waitroom.LeanHandler
}

// proxyRoute is a room's proxy as the public mux holds it. Served by net/http (through wrap), it
// first makes its writer a proxy's (statusWriter.forProxy: the upstream's redirects are not the
// mux's, its large answers not bounded); on the lean loop, leanPublic does that itself.
type proxyRoute struct{ roomProxy }

func newProxyRoute(proxy http.Handler) http.Handler { return proxyRoute{proxy.(roomProxy)} }

func (p proxyRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if sw, ok := w.(*statusWriter); ok {
		sw.forProxy()
	}
	p.roomProxy.ServeHTTP(w, r)
}

// leanPublic is the public listener's waitroom.LeanHandler.
type leanPublic struct {
	s        *Server
	mux      *http.ServeMux
	routes   routeCache
	inflight prometheus.Gauge
	tracer   *tracing.Tracer // nil: tracing off
}

func (s *Server) newLeanPublic(mux *http.ServeMux) *leanPublic {
	l := &leanPublic{s: s, mux: mux, inflight: s.metrics.inflight.WithLabelValues("public")}
	if s.tracer != nil {
		l.tracer = tracing.New(s.tracer, false)
	}
	return l
}

// ServeLean serves r when the mux routes it to a room's proxy and the proxy serves it on the
// lean loop; else it declines, having recorded nothing, and net/http serves r through s.public.
func (l *leanPublic) ServeLean(w http.ResponseWriter, r *http.Request) (served bool) {
	proxy, pattern := l.routes.route(l.mux, r)
	if proxy == nil {
		return false
	}
	start := time.Now()
	r.Pattern = pattern
	if l.tracer != nil {
		// The span is ended only when the request is served here: a declined request's span is
		// dropped unended (nothing exports it), and net/http's traced handler starts the one
		// that counts.
		var ts *tracedStatus
		var end func(int)
		w, r, ts, end = startServerSpan(l.tracer, w, r)
		defer func() {
			if served {
				end(ts.status)
			}
		}()
	}
	sw, _ := l.s.startAnswer(w, r, true) // the proxy reads no httpapi.RequestState: none is made
	l.inflight.Inc()
	defer l.inflight.Dec()
	defer l.s.finishLean(sw, r, start, &served)
	return proxy.ServeLean(sw, r)
}

// finishLean is finish for a request the lean loop offered: a declined one (no panic, nothing
// served) is not recorded, net/http records it; a panic counts as served (its answer, if any,
// was written here).
func (s *Server) finishLean(sw *statusWriter, r *http.Request, start time.Time, served *bool) {
	v := recover()
	if v == nil && !*served {
		sw.releaseLarge()
		return
	}
	*served = true
	s.record(sw, r, "public", start, v)
}

// routeCache remembers where the public mux routes a method, host and path, so that an admitted
// visitor's requests, which go to a handful of pages and assets, skip the mux's pattern matching
// (the mux allocates as it tries the API's patterns with wildcards). It holds at most
// routeCacheSize routes and starts over when full: requests for ever new paths cost what they
// cost without it.
type routeCache struct {
	routes sync.Map // routeKey -> cachedRoute
	size   atomic.Int64
}

// routeCacheSize bounds a routeCache.
const routeCacheSize = 4096

// routeKey is what the mux routes a request by (the path escaped too: patterns match segments).
type routeKey struct{ method, host, path, rawPath string }

type cachedRoute struct {
	proxy   roomProxy // nil: not a room's proxy
	pattern string
}

// route returns the room proxy r goes to and its pattern, or nil when r's route is not a room's
// proxy.
func (c *routeCache) route(mux *http.ServeMux, r *http.Request) (roomProxy, string) {
	key := routeKey{r.Method, r.Host, r.URL.Path, r.URL.RawPath}
	if v, ok := c.routes.Load(key); ok {
		cr := v.(cachedRoute)
		return cr.proxy, cr.pattern
	}
	var cr cachedRoute
	h, pattern := mux.Handler(r)
	if proxy, ok := h.(roomProxy); ok {
		cr = cachedRoute{proxy: proxy, pattern: pattern}
	}
	if c.size.Add(1) > routeCacheSize {
		c.routes.Clear()
		c.size.Store(1)
	}
	// The key's strings are cut from the request's header block: copies keep it from being held.
	key = routeKey{strings.Clone(key.method), strings.Clone(key.host), strings.Clone(key.path), strings.Clone(key.rawPath)}
	c.routes.Store(key, cr)
	return cr.proxy, cr.pattern
}
