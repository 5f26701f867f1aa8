package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
)

// reqState is what the middleware knows about one request; handlers reach it through the context.
type reqState struct {
	id  string
	log *slog.Logger
	srv *Server
	// code is the registry code of the error the request answered with ("" for success).
	code Code
}

type stateKey struct{}

func stateOf(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

// requestID returns the request id of a request's context ("" outside a request).
func requestID(ctx context.Context) string {
	if st := stateOf(ctx); st != nil {
		return st.id
	}
	return ""
}

// noteError records the error a request answers with and logs the ones operators must see.
func (st *reqState) noteError(ctx context.Context, e *Error, err error) {
	st.code = e.Code
	switch e.Code {
	case CodeInternal:
		st.log.ErrorContext(ctx, "request failed", "error", err, "request_id", st.id)
	case CodeUnavailable:
		if st.srv != nil {
			st.srv.metrics.redisErrors.Inc()
		}
		st.log.WarnContext(ctx, "store unavailable", "error", err, "request_id", st.id)
	}
}

// saneRequestID reports whether an incoming X-Request-Id can be reused: 1..128 bytes of
// letters, digits and . _ - : (anything else is replaced, so ids never carry log injection).
func saneRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !isNameRune(r) && r != '.' && r != ':' {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// discardWriter collects the headers of the mux's own 404/405 replies, which are rendered in the
// registry's shape instead.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// openAdminPaths need no admin token: Prometheus and health checkers scrape them.
var openAdminPaths = map[string]bool{"/metrics": true, "/healthz": true, "/readyz": true}

// wrap is the middleware of a listener: request id, body limit, panic recovery, admin auth,
// registry-shaped 404/405, access log and request metrics.
func (s *Server) wrap(listener string, mux *http.ServeMux, admin bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		st := &reqState{id: id, log: s.log, srv: s}
		r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
		sw := &statusWriter{ResponseWriter: w}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(sw, r.Body, s.cfg.MaxBodyBytes)
		}
		_, pattern := mux.Handler(r)
		inflight := s.metrics.inflight.WithLabelValues(listener)
		inflight.Inc()
		defer inflight.Dec()
		defer s.finish(sw, r, listener, pattern, start)
		if admin && !openAdminPaths[r.URL.Path] && !s.adminAuthorized(r) {
			writeError(sw, r, &Error{Code: CodeUnauthenticated, Message: "admin requests need Authorization: Bearer <admin token>"})
			return
		}
		if pattern == "" {
			dw := &discardWriter{header: http.Header{}}
			mux.ServeHTTP(dw, r)
			if dw.status == http.StatusMethodNotAllowed {
				sw.Header().Set("Allow", dw.header.Get("Allow"))
				writeError(sw, r, &Error{Code: CodeMethodNotAllowed, Message: r.Method + " is not allowed on " + r.URL.Path})
				return
			}
			writeError(sw, r, &Error{Code: CodeNotFound, Message: "no route " + r.Method + " " + r.URL.Path})
			return
		}
		mux.ServeHTTP(sw, r)
	})
}

// finish recovers a panic of the handler (answering 500 internal when nothing was written yet),
// then records the request's metrics and access log.
func (s *Server) finish(sw *statusWriter, r *http.Request, listener, pattern string, start time.Time) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler { //nolint:errorlint // sentinel value of panic
			panic(v)
		}
		s.log.ErrorContext(r.Context(), "panic serving request", "panic", v, "request_id", requestID(r.Context()),
			"stack", string(debug.Stack()))
		if sw.status == 0 {
			writeError(sw, r, &Error{Code: CodeInternal, Message: "internal error"})
		}
	}
	route := pattern
	if route == "" {
		route = "unmatched"
	}
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	elapsed := time.Since(start)
	s.metrics.observeRequest(listener, route, status, elapsed)
	s.log.DebugContext(r.Context(), "request", "listener", listener, "method", r.Method, "route", route,
		"status", status, "duration_ms", float64(elapsed.Microseconds())/1000, "request_id", requestID(r.Context()))
}

// adminAuthorized checks the admin token (Bearer, or the password of Basic auth for lmstfy's
// admin tools). Without a configured admin token every request is allowed: Config.validate only
// allows that on a loopback listener.
func (s *Server) adminAuthorized(r *http.Request) bool {
	if s.cfg.AdminToken == "" {
		return true
	}
	got := bearer(r)
	if got == "" {
		if _, pw, ok := r.BasicAuth(); ok {
			got = pw
		}
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AdminToken)) == 1
}

// bearer returns the token of an "Authorization: Bearer <token>" header ("" when absent).
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
