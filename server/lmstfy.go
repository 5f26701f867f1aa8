package server

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The lmstfy-compatible API (docs/lmstfy.md): lmstfy's routes, parameters, defaults, status codes
// and JSON shapes on top of the queue engine, so lmstfy client libraries work unchanged.
//
// Public listener: /api/{namespace}/{queue}[...] with the token in X-Token or ?token=.
// Admin listener: /token/..., /limits, /pools, /info, /version (its /metrics is the server's).

// lmstfy's defaults for parameters a request leaves out (whole seconds).
const (
	lmstfyDefaultTTL     = 86400
	lmstfyDefaultTries   = 1
	lmstfyDefaultTTR     = 120
	lmstfyDefaultDelay   = 0
	lmstfyDefaultTimeout = 0
)

// lmstfy's limits.
const (
	lmstfyMaxConsumeCount = 100
	lmstfyMaxBulkJobs     = 64
	lmstfyMaxAttributes   = 16
	lmstfyMaxAttributeLen = 256
	lmstfyAttributePrefix = "Job-Attr-"
	// lmstfyPool is the one pool Sluice has: every token, queue and job lives in it.
	lmstfyPool = "default"
)

// mountLmstfyPublic registers the lmstfy-compatible public routes (/api/...).
func (s *Server) mountLmstfyPublic(mux *http.ServeMux) {
	read := []Permission{PermPublish, PermConsume, PermManage}
	// The publish routes count against the token's write limit and consume against its read limit
	// (lmstfy's throttler leaves republish out; Sluice counts it: it publishes a job).
	write := func(h lmstfyHandler) lmstfyHandler { return s.lmstfyLimited(limitWrite, h) }
	routes := []struct {
		pattern string
		multi   bool // the {q} segment may list queues: q1,q2,...
		perms   []Permission
		h       lmstfyHandler
	}{
		{"PUT /api/{ns}/{q}", false, []Permission{PermPublish}, write(s.lmstfyPublish)},
		{"PUT /api/{ns}/{q}/bulk", false, []Permission{PermPublish}, write(s.lmstfyPublishBulk)},
		{"PUT /api/{ns}/{q}/job/{id}", false, []Permission{PermPublish}, write(s.lmstfyRepublish)},
		{"GET /api/{ns}/{q}", true, []Permission{PermConsume}, s.lmstfyLimited(limitRead, s.lmstfyConsume)},
		{"DELETE /api/{ns}/{q}/job/{id}", false, []Permission{PermConsume, PermPublish}, s.lmstfyDeleteJob},
		{"GET /api/{ns}/{q}/peek", false, read, s.lmstfyPeekQueue},
		{"GET /api/{ns}/{q}/job/{id}", false, read, s.lmstfyPeekJob},
		{"GET /api/{ns}/{q}/size", false, read, s.lmstfySize},
		{"DELETE /api/{ns}/{q}", false, []Permission{PermManage}, s.lmstfyDestroyQueue},
		{"GET /api/{ns}/{q}/deadletter", false, read, s.lmstfyPeekDeadLetter},
		{"PUT /api/{ns}/{q}/deadletter", false, []Permission{PermManage}, s.lmstfyRespawnDeadLetter},
		{"DELETE /api/{ns}/{q}/deadletter", false, []Permission{PermManage}, s.lmstfyDeleteDeadLetter},
		{"GET /api/{ns}/{q}/deadletter/size", false, read, s.lmstfyDeadLetterSize},
	}
	for _, rt := range routes {
		h := s.lmstfyAPI(rt.multi, rt.perms, rt.h)
		if rt.multi {
			h = lmstfyNoHead(h) // consume: a GET that leases jobs
		}
		mux.HandleFunc(rt.pattern, h)
	}
	// Anything else under /api answers as lmstfy's router does.
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		lmstfyError(w, r, http.StatusNotFound, "api not found")
	})
}

// lmstfyNoHead refuses HEAD, which Go's mux routes to GET handlers, on a GET that changes state
// (consume would lease jobs whose bodies nobody reads). lmstfy's router has no HEAD routes.
func lmstfyNoHead(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			lmstfyError(w, r, http.StatusNotFound, "api not found")
			return
		}
		h(w, r)
	}
}

// mountLmstfyAdmin registers the lmstfy-compatible admin routes (/token/..., /limits, ...).
func (s *Server) mountLmstfyAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /token/{ns}", s.lmstfyListTokens)
	mux.HandleFunc("POST /token/{ns}", s.lmstfyNewToken)
	mux.HandleFunc("DELETE /token/{ns}/{token}", s.lmstfyDeleteToken)
	mux.HandleFunc("GET /token/{ns}/{token}/limit", s.lmstfyGetLimit)
	mux.HandleFunc("POST /token/{ns}/{token}/limit", s.lmstfyAddLimit)
	mux.HandleFunc("PUT /token/{ns}/{token}/limit", s.lmstfySetLimit)
	mux.HandleFunc("DELETE /token/{ns}/{token}/limit", s.lmstfyDeleteLimit)
	mux.HandleFunc("GET /limits", s.lmstfyListLimits)
	mux.HandleFunc("GET /pools", s.lmstfyPools)
	mux.HandleFunc("GET /info", s.lmstfyInfo)
	mux.HandleFunc("GET /version", s.lmstfyVersion)
}

// lmstfyCall is an /api request that passed lmstfy's name checks and token check.
type lmstfyCall struct {
	ns string
	// q is the queue; for consume, the comma-separated list as sent.
	q   string
	tok Token
	// query is the request's query string, parsed once (URL.Query parses it again on every call).
	query url.Values
}

type lmstfyHandler func(w http.ResponseWriter, r *http.Request, c lmstfyCall)

// lmstfyAPI checks a request the way lmstfy's middleware does, in its order: the names (400),
// the pool named by a "pool:" token prefix (404), the token (401); then Sluice's permissions (403).
func (s *Server) lmstfyAPI(multi bool, perms []Permission, h lmstfyHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, q := r.PathValue("ns"), r.PathValue("q")
		if msg := lmstfyCheckNames(ns, q, multi); msg != "" {
			lmstfyError(w, r, http.StatusBadRequest, msg)
			return
		}
		query := r.URL.Query()
		raw := r.Header.Get("X-Token")
		if raw == "" {
			raw = query.Get("token")
		}
		pool, secret := lmstfySplitToken(raw)
		if pool != lmstfyPool {
			lmstfyError(w, r, http.StatusNotFound, "pool not found")
			return
		}
		if secret == "" {
			lmstfyError(w, r, http.StatusUnauthorized, "token not found")
			return
		}
		tok, err := s.tokens.Authenticate(r.Context(), secret)
		if errors.Is(err, ErrUnauthenticated) || (err == nil && tok.Namespace != ns) {
			lmstfyError(w, r, http.StatusUnauthorized, "invalid token")
			return
		}
		if err != nil {
			lmstfyFail(w, r, err)
			return
		}
		if !slices.ContainsFunc(perms, tok.Allows) {
			names := make([]string, len(perms))
			for i, p := range perms {
				names[i] = string(p)
			}
			lmstfyError(w, r, http.StatusForbidden, "the token lacks the "+strings.Join(names, " or ")+" permission")
			return
		}
		h(w, r, lmstfyCall{ns: ns, q: q, tok: tok, query: query})
	}
}

// lmstfyCheckNames applies lmstfy's name rules and returns its message for a bad name ("" when
// the names are good).
func lmstfyCheckNames(ns, q string, multi bool) string {
	if len(ns) > 255 || (!multi && len(q) > 255) {
		return "namespace or queue name too long"
	}
	if !validName(ns) {
		return "namespace name contains forbidden characters"
	}
	if multi {
		for _, name := range strings.Split(q, ",") {
			if len(name) > 255 {
				return "namespace or queue name too long"
			}
			if name != "" && !validName(name) {
				return "queue name contains forbidden characters"
			}
		}
		return ""
	}
	if !validName(q) {
		return "queue name contains forbidden characters"
	}
	return ""
}

// lmstfySplitToken splits lmstfy's "[pool:]token" form; without a pool (or with an empty one) it
// is the default pool.
func lmstfySplitToken(raw string) (pool, token string) {
	p, t, ok := strings.Cut(raw, ":")
	if !ok {
		return lmstfyPool, raw
	}
	return cmp.Or(p, lmstfyPool), t
}

// lmstfyError answers with lmstfy's error shape, {"error": msg}.
func lmstfyError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if st := stateOf(r.Context()); st != nil {
		code := CodeInvalidArgument
		switch status {
		case http.StatusUnauthorized:
			code = CodeUnauthenticated
		case http.StatusForbidden:
			code = CodePermissionDenied
		case http.StatusNotFound:
			code = CodeNotFound
		case http.StatusRequestEntityTooLarge:
			code = CodePayloadTooLarge
		}
		st.code = code
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

// lmstfyFail answers a failure that is not the caller's mistake (Redis down, a bug) in lmstfy's
// shape, with the registry's status (500, or 503 with Retry-After while Redis is unreachable), and
// logs it. A request whose client went away gets no answer.
func lmstfyFail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	e := apiError(err)
	if st := stateOf(r.Context()); st != nil {
		st.noteError(r.Context(), e, err)
	}
	msg := e.Message
	switch e.Code {
	case CodeInternal:
		msg = "internal error"
	case CodeInvalidArgument:
		msg = "invalid " + e.Field + ": " + e.Message
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((e.RetryAfter+time.Second-1)/time.Second))))
	}
	writeJSON(w, e.Status(), map[string]string{"error": msg})
}

// lmstfyParam parses an unsigned whole-number query parameter of at most bits bits, with lmstfy's
// default when it is absent. ok is false when it is present but not such a number.
func lmstfyParam(query url.Values, name string, def uint64, bits int) (v uint64, ok bool) {
	vals, present := query[name]
	if !present {
		return def, true
	}
	v, err := strconv.ParseUint(vals[0], 10, bits)
	return v, err == nil
}

// lmstfySeconds turns whole seconds into a Duration.
func lmstfySeconds(n uint64) time.Duration { return time.Duration(n) * time.Second }
