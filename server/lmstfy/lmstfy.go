package lmstfy

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// lmstfy's defaults for parameters a request leaves out (whole seconds).
const (
	defaultTTL     = 86400
	defaultTries   = 1
	defaultTTR     = 120
	defaultDelay   = 0
	defaultTimeout = 0
)

// lmstfy's limits.
const (
	maxConsumeCount = 100
	maxBulkJobs     = 64
	maxAttributes   = 16
	// An attribute name is at most 32 bytes and a value at most 128, as in lmstfy's current
	// release; longer ones are cut (lmstfy cuts over-long attributes rather than refusing them).
	maxAttributeName  = 32
	maxAttributeValue = 128
	attributePrefix   = "Job-Attr-"
	// defaultPool is the one pool Sluice has: every token, queue and job lives in it.
	defaultPool = "default"
)

// Config is what the lmstfy-compatible API needs from the server that mounts it.
type Config struct {
	// Queue is the job queue engine.
	Queue *queue.Client
	// Tokens, Limits and Limiter are the server's tenancy: lmstfy tokens are namespace tokens.
	Tokens  *tenant.TokenStore
	Limits  *tenant.LimitStore
	Limiter *httpapi.Limiter
	// MaxConsumeTimeout caps a consume's timeout.
	MaxConsumeTimeout time.Duration
	// Drain ends when a graceful shutdown starts: blocked consumes return at once. Required.
	Drain context.Context
	// WatchConsumer, when set, is told of each consume of namespace ns's queues as it starts,
	// and the function it returns when it answered (the dashboard's list of consumers).
	WatchConsumer func(ctx context.Context, ns string, queues []string) (done func())
}

// API is the lmstfy-compatible API. Its handlers return errors (Error for the caller's
// mistakes, anything else for failures), which writeError renders once in lmstfy's shapes.
type API struct {
	cfg    Config
	queue  *queue.Client
	tokens *tenant.TokenStore
	limits *tenant.LimitStore
}

// New returns the API on cfg's stores.
func New(cfg Config) *API {
	return &API{cfg: cfg, queue: cfg.Queue, tokens: cfg.Tokens, limits: cfg.Limits}
}

// route is one /api route: its pattern, lmstfy's name rule for {q}, the permissions (one of them
// is needed) and the token limit it counts against.
type route struct {
	pattern string
	multi   bool // the {q} segment may list queues: q1,q2,...
	perms   []tenant.Permission
	limit   tenant.LimitDir
	h       handler
}

// MountPublic registers the lmstfy-compatible public routes (/api/...).
func (a *API) MountPublic(mux *http.ServeMux) {
	read := []tenant.Permission{tenant.PermPublish, tenant.PermConsume, tenant.PermManage}
	publish := []tenant.Permission{tenant.PermPublish}
	manage := []tenant.Permission{tenant.PermManage}
	// The publish routes count against the token's write limit and consume against its read limit
	// (lmstfy's throttler leaves republish out; Sluice counts it: it publishes a job).
	routes := []route{
		{"PUT /api/{ns}/{q}", false, publish, tenant.LimitWrite, a.publish},
		{"PUT /api/{ns}/{q}/bulk", false, publish, tenant.LimitWrite, a.publishBulk},
		{"PUT /api/{ns}/{q}/job/{id}", false, publish, tenant.LimitWrite, a.republish},
		{"GET /api/{ns}/{q}", true, []tenant.Permission{tenant.PermConsume}, tenant.LimitRead, a.consume},
		{"DELETE /api/{ns}/{q}/job/{id}", false, []tenant.Permission{tenant.PermConsume, tenant.PermPublish}, tenant.LimitNone, a.deleteJob},
		{"GET /api/{ns}/{q}/peek", false, read, tenant.LimitNone, a.peekQueue},
		{"GET /api/{ns}/{q}/job/{id}", false, read, tenant.LimitNone, a.peekJob},
		{"GET /api/{ns}/{q}/size", false, read, tenant.LimitNone, a.queueSize},
		{"DELETE /api/{ns}/{q}", false, manage, tenant.LimitNone, a.destroyQueue},
		{"GET /api/{ns}/{q}/deadletter", false, read, tenant.LimitNone, a.peekDeadLetter},
		{"PUT /api/{ns}/{q}/deadletter", false, manage, tenant.LimitNone, a.respawnDeadLetter},
		{"DELETE /api/{ns}/{q}/deadletter", false, manage, tenant.LimitNone, a.deleteDeadLetter},
		{"GET /api/{ns}/{q}/deadletter/size", false, read, tenant.LimitNone, a.deadLetterSize},
	}
	for _, rt := range routes {
		mux.HandleFunc(rt.pattern, adapt(a.guard(rt)))
	}
	// Anything else under /api answers as lmstfy's router does.
	mux.HandleFunc("/api/", NotFound)
}

// NotFound answers as lmstfy's router does for a path it has no route for: 404 "api not found".
// The server uses it for the /api paths its mux itself refuses.
func NotFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, errorf(http.StatusNotFound, "api not found"))
}

// MountAdmin registers the lmstfy-compatible admin routes (/token/..., /limits, ...).
func (a *API) MountAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /token/{ns}", adapt(a.listTokens))
	mux.HandleFunc("POST /token/{ns}", adapt(a.newToken))
	mux.HandleFunc("DELETE /token/{ns}/{token}", adapt(a.deleteToken))
	mux.HandleFunc("GET /token/{ns}/{token}/limit", adapt(a.getLimit))
	mux.HandleFunc("POST /token/{ns}/{token}/limit", adapt(a.addLimit))
	mux.HandleFunc("PUT /token/{ns}/{token}/limit", adapt(a.setLimit))
	mux.HandleFunc("DELETE /token/{ns}/{token}/limit", adapt(a.deleteLimit))
	mux.HandleFunc("GET /limits", adapt(a.listLimits))
	mux.HandleFunc("GET /pools", adapt(a.listPools))
	mux.HandleFunc("GET /info", adapt(a.getInfo))
	mux.HandleFunc("GET /version", adapt(a.getVersion))
}

// call is an /api request that passed lmstfy's name checks and token check.
type call struct {
	ns string
	// q is the queue; for consume, the comma-separated list as sent.
	q   string
	tok tenant.Token
	// query is the request's query string, parsed once (URL.Query parses it again on every call).
	query url.Values
}

// handler is an /api route's handler: it writes its answer, or returns an error for writeError.
type handler func(w http.ResponseWriter, r *http.Request, c call) error

// guard checks a request the way lmstfy's middleware does, in its order: the names (400),
// the pool named by a "pool:" token prefix (404), the token (401); then Sluice's permissions (403)
// and the token's rate limit (429).
func (a *API) guard(rt route) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if rt.multi && r.Method == http.MethodHead {
			// Go's mux routes HEAD to GET handlers; consume is a GET that leases jobs whose
			// bodies nobody would read. lmstfy's router has no HEAD routes.
			return errorf(http.StatusNotFound, "api not found")
		}
		ns, q := r.PathValue("ns"), r.PathValue("q")
		if msg := checkNames(ns, q, rt.multi); msg != "" {
			return errorf(http.StatusBadRequest, msg)
		}
		query := r.URL.Query()
		raw := r.Header.Get("X-Token")
		if raw == "" {
			raw = query.Get("token")
		}
		pool, secret := splitToken(raw)
		if pool != defaultPool {
			return errorf(http.StatusNotFound, "pool not found")
		}
		if secret == "" {
			return errorf(http.StatusUnauthorized, "token not found")
		}
		tok, err := httpapi.AuthenticateToken(r, a.tokens, secret, errInvalidToken)
		if err != nil {
			return err
		}
		if tok.Namespace != ns {
			return errInvalidToken
		}
		if !slices.ContainsFunc(rt.perms, tok.Allows) {
			names := make([]string, len(rt.perms))
			for i, p := range rt.perms {
				names[i] = string(p)
			}
			return errorf(http.StatusForbidden, "the token lacks the "+strings.Join(names, " or ")+" permission")
		}
		c := call{ns: ns, q: q, tok: tok, query: query}
		if rt.limit == tenant.LimitNone {
			return rt.h(w, r, c)
		}
		r = httpapi.WithToken(r, tok)
		return a.cfg.Limiter.Wrap(rt.limit, deny, func(w http.ResponseWriter, r *http.Request) error {
			return rt.h(w, r, c)
		})(w, r)
	}
}

// errInvalidToken is lmstfy's answer to an unknown token, or one of another namespace.
var errInvalidToken = errorf(http.StatusUnauthorized, "invalid token")

// deny is lmstfy's throttler's answer: 429 {"msg": "token(...) <consume|produce> reach the limit
// rate, please retry later"}.
func deny(tok tenant.Token, dir tenant.LimitDir, _ tenant.Spent) error {
	return &Error{
		Status: http.StatusTooManyRequests, key: "msg",
		Message: fmt.Sprintf("token(%s) %s reach the limit rate, please retry later", tok.ID, dir.Action()),
	}
}

// checkNames applies lmstfy's name rules and returns its message for a bad name ("" when
// the names are good).
func checkNames(ns, q string, multi bool) string {
	if len(ns) > 255 || (!multi && len(q) > 255) {
		return "namespace or queue name too long"
	}
	if !tenant.ValidName(ns) {
		return "namespace name contains forbidden characters"
	}
	if multi {
		for _, name := range strings.Split(q, ",") {
			if len(name) > 255 {
				return "namespace or queue name too long"
			}
			if name != "" && !tenant.ValidName(name) {
				return "queue name contains forbidden characters"
			}
		}
		return ""
	}
	if !tenant.ValidName(q) {
		return "queue name contains forbidden characters"
	}
	return ""
}

// splitToken splits lmstfy's "[pool:]token" form; without a pool (or with an empty one) it
// is the default pool.
func splitToken(raw string) (pool, token string) {
	p, t, ok := strings.Cut(raw, ":")
	if !ok {
		return defaultPool, raw
	}
	return cmp.Or(p, defaultPool), t
}

// uintParam parses an unsigned whole-number query parameter of at most bits bits, with lmstfy's
// default when it is absent. ok is false when it is present but not such a number.
func uintParam(query url.Values, name string, def uint64, bits int) (v uint64, ok bool) {
	vals, present := query[name]
	if !present {
		return def, true
	}
	v, err := strconv.ParseUint(vals[0], 10, bits)
	return v, err == nil
}

// wholeSeconds turns whole seconds into a Duration.
func wholeSeconds(n uint64) time.Duration { return time.Duration(n) * time.Second }
