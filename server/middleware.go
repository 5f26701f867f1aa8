package server

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/adminguard"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/lmstfy"
	"github.com/sluicehq/sluice/server/tenant"
)

// saneRequestID reports whether an incoming X-Request-Id can be reused: 1..128 bytes of
// letters, digits and . _ - : (anything else is replaced, so ids never carry log injection).
func saneRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !tenant.IsNameRune(r) && r != '.' && r != ':' {
			return false
		}
	}
	return true
}

// requestIDs makes the ids of requests that come without a usable X-Request-Id: a random prefix
// drawn once per server and a counter, so an id costs no system call and ids of different servers
// behind one load balancer do not collide.
type requestIDs struct {
	prefix string
	seq    atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &requestIDs{prefix: hex.EncodeToString(b[:])}
}

// next returns a 24-character id: the 12-hex-digit prefix, then the counter in 12 hex digits.
func (g *requestIDs) next() string {
	var buf [24]byte
	copy(buf[:], g.prefix)
	n := g.seq.Add(1)
	for i := len(buf) - 1; i >= len(g.prefix); i-- {
		buf[i] = "0123456789abcdef"[n&0xf]
		n >>= 4
	}
	return string(buf[:])
}

// statusWriter remembers the status a handler wrote. While the mux itself answers (no route
// matched, or a redirect to a cleaned path), it holds the reply back so that wrap can answer in the
// registry's shape instead: muxStatus is then the status the mux chose.
type statusWriter struct {
	http.ResponseWriter
	id        [1]string // the request's id (X-Request-Id), as its header value
	req       *http.Request
	status    int
	muxStatus int
	muxHeader http.Header
	// rc and writeTimeout bound each write of the answer (Config.WriteTimeout); rc is nil when
	// there is no bound.
	rc           *http.ResponseController
	rcv          http.ResponseController // what rc points to when the middleware made it (one allocation less)
	writeTimeout time.Duration
	// large bounds the client's concurrent large answers (largeresponses.go; nil: no bound);
	// largeHeld is the bound whose slot this answer holds, and dropBody drops what the handler
	// writes after its answer was replaced by a refusal.
	large       *largeResponses
	largeHeld   *largeResponses
	client      netip.Addr
	dropBody    bool
	deadlineSet time.Time // when extendWriteDeadline last moved the deadline
}

// forProxy makes w the writer of a room proxy's answer: the upstream's answer, whose status is
// its own (never the mux's) and which is not held to the bound on large answers (it is streamed
// through a fixed buffer; see docs/server.md, "Concurrent large answers").
func (w *statusWriter) forProxy() {
	w.req, w.large = nil, nil
}

// extendWriteDeadline gives the write about to start WriteTimeout to reach the client. The
// deadline is set per write, not per request: a long poll waits as long as it likes before its
// answer starts, a long answer to a reader that keeps up is never cut, and a client that stops
// reading (or reads slower than one write in WriteTimeout) loses its connection instead of
// holding the handler, its buffers and its slot. A deadline moved less than a sixteenth of
// WriteTimeout ago is left as it is (each write still gets at least 15/16 of it): moving it costs a
// timer update, and a proxied request would pay three (header, body, end) in a few microseconds.
func (w *statusWriter) extendWriteDeadline() {
	if w.rc == nil {
		return
	}
	now := time.Now()
	if !w.deadlineSet.IsZero() && now.Sub(w.deadlineSet) < w.writeTimeout/16 {
		return
	}
	w.deadlineSet = now
	_ = w.rc.SetWriteDeadline(now.Add(w.writeTimeout)) // tests' recorders have none
}

// muxReply reports whether a reply with status comes from the mux rather than a route's handler:
// no pattern matched (404 and 405), or a redirect (the mux's answer to an unclean path such as
// "//v1/..."; no Sluice handler redirects).
func (w *statusWriter) muxReply(status int) bool {
	if w.req == nil {
		return false
	}
	return w.req.Pattern == "" || status == http.StatusMovedPermanently || status == http.StatusTemporaryRedirect ||
		status == http.StatusPermanentRedirect
}

// holding reports whether the mux's own reply is being held back.
func (w *statusWriter) holding() bool { return w.req != nil && w.muxStatus != 0 }

func (w *statusWriter) Header() http.Header {
	if w.req != nil && w.req.Pattern == "" {
		// The mux sets headers (Allow, Content-Type) before its 404/405: keep them off the reply.
		if w.muxHeader == nil {
			w.muxHeader = http.Header{}
		}
		return w.muxHeader
	}
	return w.ResponseWriter.Header()
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && w.muxStatus == 0 && w.muxReply(code) {
		w.muxStatus = code
		return
	}
	if w.holding() {
		return
	}
	if w.dropBody {
		return
	}
	if w.status == 0 && w.large != nil && !w.large.admit(w, code) {
		return
	}
	if w.status == 0 {
		w.status = code
	}
	w.extendWriteDeadline()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.holding() || w.dropBody {
		return len(b), nil
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.extendWriteDeadline()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// uncleanPath reports whether the mux would redirect path to a cleaned form ("//", "/./", "/../").
func uncleanPath(p string) bool {
	return strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") ||
		strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
}

// openAdminPaths need no admin token: Prometheus and health checkers scrape them. Their reads
// also skip the admin guard.
var openAdminPaths = map[string]bool{"/metrics": true, "/healthz": true, "/readyz": true}

// guardCodes are the registry codes of the admin guard's refusals.
var guardCodes = map[adminguard.Reason]httpapi.Code{
	adminguard.HostRefused:        httpapi.CodeAdminHostRefused,
	adminguard.OriginRefused:      httpapi.CodeAdminOriginRefused,
	adminguard.ContentTypeRefused: httpapi.CodeAdminContentTypeRefused,
	adminguard.CallbackRefused:    httpapi.CodeAdminCallbackRefused,
}

// adminGuard is how the admin listener tells tools from web pages (internal/adminguard): without
// an admin token only loopback Host names are served (no DNS rebinding); always, a foreign Origin
// is refused and a state-changing body must be JSON, or a form on lmstfy's /token/ routes or the
// dashboard's /ui/ pages.
func (s *Server) adminGuard() adminguard.Config {
	return adminguard.Config{
		LoopbackHostsOnly: s.cfg.AdminToken == "",
		OpenReads:         openAdminPaths,
		// The dashboard's forms carry a CSRF token of their session (server/ui).
		FormPrefixes: []string{"/token/", "/ui/"},
	}
}

// dashboardPath reports whether path belongs to the dashboard (server/ui), which checks the admin
// token itself, once, and then its session cookie and CSRF tokens.
func dashboardPath(path string) bool {
	return path == "/ui" || strings.HasPrefix(path, "/ui/")
}

// wrap is the middleware of a listener: request id, the error map (errorMap), body limit, panic
// recovery, the admin guard and admin auth, registry-shaped 404/405, access log and request
// metrics. The mux routes each request once; the route's pattern is read back from the request
// afterwards (ServeMux sets Request.Pattern).
func (s *Server) wrap(listener string, mux *http.ServeMux, admin bool) http.Handler {
	inflight := s.metrics.inflight.WithLabelValues(listener)
	guard := s.adminGuard()
	errs := errorMap()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw, r := s.begin(w, r, errs)
		inflight.Inc()
		defer inflight.Dec()
		defer s.finish(sw, r, listener, start)
		if admin {
			if ref := adminguard.Check(r, guard); ref != nil {
				if !uncleanPath(r.URL.Path) {
					_, r.Pattern = mux.Handler(r) // for the metrics' route label only
				}
				httpapi.WriteError(sw, r, &httpapi.Error{Code: guardCodes[ref.Reason], Message: ref.Message})
				return
			}
		}
		if admin && !openAdminPaths[r.URL.Path] && !dashboardPath(r.URL.Path) {
			if err := s.checkAdmin(r); err != nil {
				if !uncleanPath(r.URL.Path) {
					_, r.Pattern = mux.Handler(r) // for the metrics' route label only
				}
				httpapi.WriteError(sw, r, err)
				return
			}
		}
		sw.req = r
		mux.ServeHTTP(sw, r)
		sw.req = nil
		switch sw.muxStatus {
		case 0:
		case http.StatusMethodNotAllowed:
			sw.Header().Set("Allow", sw.muxHeader.Get("Allow"))
			httpapi.WriteError(sw, r, &httpapi.Error{Code: httpapi.CodeMethodNotAllowed, Message: r.Method + " is not allowed on " + r.URL.Path})
		default:
			r.Pattern = ""
			sw.Header().Del("Location")
			if !admin && (r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")) {
				lmstfy.NotFound(sw, r) // lmstfy clients read its shape
				return
			}
			httpapi.WriteError(sw, r, &httpapi.Error{Code: httpapi.CodeNotFound, Message: "no route " + r.Method + " " + r.URL.Path})
		}
	})
}

// begin is the start of wrap's work on a request: startAnswer's, and the request's state
// (httpapi.RequestState) for the API's handlers.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, errs httpapi.ErrorMap) (*statusWriter, *http.Request) {
	sw, https := s.startAnswer(w, r, false)
	st := &httpapi.RequestState{ID: sw.id[0], Log: s.log, OnUnavailable: s.onUnavailable, Errors: errs, Guard: s.guard,
		Client: sw.client, HTTPS: https}
	return sw, r.WithContext(httpapi.WithState(r.Context(), st))
}

// startAnswer is what every request gets, a room proxy's too: its id (X-Request-Id, kept when
// sane), the writer that bounds and records the answer, and the body limit. https reports
// whether the client came over TLS (proxies.client). proxied starts a room proxy's answer (see
// forProxy), whose client address nothing reads.
func (s *Server) startAnswer(w http.ResponseWriter, r *http.Request, proxied bool) (sw *statusWriter, https bool) {
	id := r.Header.Get("X-Request-Id")
	if !saneRequestID(id) {
		id = s.requestIDs.next()
	}
	sw = &statusWriter{ResponseWriter: w, rcv: *http.NewResponseController(w), writeTimeout: s.cfg.WriteTimeout}
	if proxied {
		sw.forProxy()
	} else {
		sw.large = s.large
		sw.client, https = s.proxies.client(r)
	}
	sw.rc = &sw.rcv
	sw.id[0] = id
	w.Header()["X-Request-Id"] = sw.id[:] // the header's value slice is sw's: one allocation less
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(sw, &deadlineBody{ReadCloser: r.Body, rc: sw.rc, timeout: s.cfg.BodyReadTimeout}, s.cfg.MaxBodyBytes)
	}
	return sw, https
}

// finish recovers a panic of the handler (answering 500 internal when nothing was written yet),
// then records the request's metrics and access log.
func (s *Server) finish(sw *statusWriter, r *http.Request, listener string, start time.Time) {
	s.record(sw, r, listener, start, recover())
}

// record is finish with the panic recovered (nil: none).
func (s *Server) record(sw *statusWriter, r *http.Request, listener string, start time.Time, v any) {
	sw.req = nil
	defer sw.releaseLarge()
	sw.extendWriteDeadline() // for what net/http writes after the handler: the last buffered bytes
	if v != nil {
		if v == http.ErrAbortHandler { //nolint:errorlint // sentinel value of panic
			panic(v)
		}
		s.log.ErrorContext(r.Context(), "panic serving request", "panic", v, "request_id", sw.id[0],
			"stack", string(debug.Stack()))
		if sw.status == 0 {
			httpapi.WriteError(sw, r, &httpapi.Error{Code: httpapi.CodeInternal, Message: "internal error"})
		}
	}
	route := r.Pattern
	if route == "" {
		route = "unmatched"
	}
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	elapsed := time.Since(start)
	s.metrics.observeRequest(listener, route, status, elapsed)
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.DebugContext(r.Context(), "request", "listener", listener, "method", r.Method, "route", route,
			"status", status, "duration_ms", float64(elapsed.Microseconds())/1000, "request_id", sw.id[0])
	}
}

// bearer returns the token of an "Authorization: Bearer <token>" header ("" when absent).
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// deadlineBody bounds how long a request body takes to arrive. The listeners set only a
// ReadHeaderTimeout: a client that sent its headers and then stalled held its request open for
// as long as it liked. A ReadTimeout on the server would also cut long-polling consumes, whose
// connections net/http keeps reading in the background while the handler waits; so the deadline
// is set on the connection when the handler starts reading the body, and cleared at the body's
// end (a body not read to its end, such as one over MaxBodyBytes, ends the connection anyway).
type deadlineBody struct {
	io.ReadCloser
	rc            *http.ResponseController
	timeout       time.Duration
	started, done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout)) // tests' recorders have none: no bound
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done { //nolint:errorlint // Read returns io.EOF itself, never wrapped
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	// After a timeout the deadline stays: net/http reads what is left of an unread body before it
	// answers, and would wait for the stalled client again.
	return n, err
}
