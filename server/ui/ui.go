package ui

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
	"github.com/sluicehq/sluice/waitroom"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what the dashboard needs from the server.
type Config struct {
	// Redis holds the throughput samples. Required.
	Redis redis.UniversalClient
	// Prefix starts the sample keys, like every key Sluice writes. Default "sluice".
	Prefix string
	// Queue is the job queue the pages show and act on. Required.
	Queue *queue.Client
	// Namespaces and Tokens are the tenancy stores of the tokens page. Required.
	Namespaces *tenant.NamespaceStore
	Tokens     *tenant.TokenStore
	// Limits are the tokens' rate limits, removed with a revoked token. Required.
	Limits *tenant.LimitStore
	// Quotas are the namespaces' quotas the namespace page shows beside their usage. Default nil:
	// the page shows no quotas.
	Quotas *tenant.QuotaStore
	// Deletions are the namespace deletions in progress, whose progress the namespace page shows.
	// Default nil: none shown.
	Deletions *tenant.DeletionStore
	// Relay is the request queue of the endpoints and tasks pages. Default nil: those pages say
	// the request queue is not set up.
	Relay *relay.Client
	// Rooms is the waiting room client of the rooms page. Default nil: the page says there is none.
	Rooms *waitroom.Client
	// AdminToken, when set, is what the login page asks for. Default "": no login (the admin
	// listener then serves loopback hosts only).
	AdminToken string
	// SessionTTL is how long a login lasts at most. Default 12h.
	SessionTTL time.Duration
	// SessionIdleTimeout ends a session that made no request for that long. Default 30m.
	SessionIdleTimeout time.Duration
	// SampleInterval is how often Sampler records the queues' counters. Default 10s (a sample
	// per minute is kept; the interval bounds how far a minute's edge may be off).
	SampleInterval time.Duration
	// PublicAddr returns the address the public API listens on (host:port), for the hints that
	// show how to call it. Default nil: the hints name the host the dashboard was reached by, on
	// the public API's default port.
	PublicAddr func() string
	// Version is the server's version, shown on the servers page.
	Version string
	// RedisMode says how the server reaches Redis ("standalone", "sentinel", "cluster"), shown
	// on the servers page's Redis panel. Default "standalone".
	RedisMode string
	// Logger receives the dashboard's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sluice")
	c.SessionTTL = cmp.Or(c.SessionTTL, 12*time.Hour)
	c.SessionIdleTimeout = cmp.Or(c.SessionIdleTimeout, 30*time.Minute)
	c.SampleInterval = cmp.Or(c.SampleInterval, 10*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.RedisMode = cmp.Or(c.RedisMode, "standalone")
	return c
}

func (c Config) validate() error {
	switch {
	case c.Redis == nil:
		return errors.New("ui: Config.Redis is required")
	case c.Queue == nil:
		return errors.New("ui: Config.Queue is required")
	case c.Namespaces == nil || c.Tokens == nil || c.Limits == nil:
		return errors.New("ui: Config.Namespaces, Config.Tokens and Config.Limits are required")
	case c.SessionTTL < time.Minute || c.SessionIdleTimeout < time.Minute:
		return fmt.Errorf("ui: Config.SessionTTL (%s) and Config.SessionIdleTimeout (%s) must be at least a minute", c.SessionTTL, c.SessionIdleTimeout)
	}
	return nil
}

// UI is the dashboard: its handler and the sampler behind its throughput charts.
type UI struct {
	cfg      Config
	log      *slog.Logger
	sessions *sessions
	pages    map[string]*template.Template
	handler  http.Handler
	sampler  *Sampler
	presence *Presence
	nodeCPU  nodeCPU // the Redis Cluster nodes' last CPU readings (redisnodes.go)
}

// New builds the dashboard. Mount Handler under /ui/ on the admin listener, and start the
// Sampler with the server's other services.
func New(cfg Config) (*UI, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	u := &UI{cfg: cfg, log: cfg.Logger, pages: pages, nodeCPU: nodeCPU{last: map[string]cpuReading{}}}
	scripts := newScripts(cfg)
	u.sessions = newSessions(cfg, scripts)
	u.sampler = newSampler(cfg, scripts)
	u.presence = newPresence(cfg, scripts)
	u.handler = u.routes()
	return u, nil
}

// Handler serves every path under /ui/.
func (u *UI) Handler() http.Handler { return u.handler }

// Sampler returns the throughput sampler: a background service the server starts and stops with
// its others (tests drive its SampleOnce).
func (u *UI) Sampler() *Sampler { return u.sampler }

// Presence returns the server's heartbeat: a background service the server starts with its
// others, whose Watch the consume handler calls.
func (u *UI) Presence() *Presence { return u.presence }

// handler is a page or action: it writes its answer or returns an error, rendered as an HTML page
// (pages, actions) or in the native JSON shape (paths under /ui/api/).
type handler func(w http.ResponseWriter, r *http.Request) error

func (u *UI) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", cacheStatic(http.FileServerFS(static))))
	mux.HandleFunc("GET /ui/login", u.open(u.loginPage))
	mux.HandleFunc("POST /ui/login", u.open(u.login))
	page := func(pattern string, h handler) { mux.HandleFunc(pattern, u.guard(h)) }
	page("POST /ui/logout", u.logout)
	page("POST /ui/logout-everywhere", u.logoutEverywhere)
	page("GET /ui/{$}", u.overview)
	page("GET /ui/api/overview", u.overviewJSON)
	page("GET /ui/find", u.find)
	page("GET /ui/ns/{ns}", u.namespacePage)
	page("GET /ui/api/ns/{ns}", u.namespaceJSON)
	page("GET /ui/ns/{ns}/queues/{q}", u.queuePage)
	page("GET /ui/api/ns/{ns}/queues/{q}", u.queueJSON)
	page("POST /ui/ns/{ns}/queues/{q}/pause", u.pause)
	page("POST /ui/ns/{ns}/queues/{q}/resume", u.resume)
	page("POST /ui/ns/{ns}/queues/{q}/purge", u.purge)
	page("GET /ui/ns/{ns}/queues/{q}/jobs/{id}", u.jobPage)
	page("POST /ui/ns/{ns}/queues/{q}/jobs/action", u.jobsAction)
	page("GET /ui/ns/{ns}/queues/{q}/dead", u.deadPage)
	page("POST /ui/ns/{ns}/queues/{q}/dead/respawn", u.deadRespawn)
	page("POST /ui/ns/{ns}/queues/{q}/dead/delete", u.deadDelete)
	page("GET /ui/schedules", u.schedulesPage)
	page("POST /ui/schedules/{ns}/{name}/{action}", u.scheduleAction)
	page("GET /ui/servers", u.serversPage)
	page("GET /ui/api/servers", u.serversJSON)
	page("GET /ui/tokens", u.tokensPage)
	page("POST /ui/tokens", u.createToken)
	page("POST /ui/tokens/{ns}/{id}/revoke", u.revokeToken)
	systemPage(u, page, "endpoints", "Request queue", "Endpoints", u.cfg.Relay != nil, errNoRelay, u.endpointsLive)
	systemPage(u, page, "rooms", "Waiting rooms", "Rooms", u.cfg.Rooms != nil, errNoRooms, u.roomsLive)
	for pattern, h := range u.systemRoutes() {
		page(pattern, h)
	}
	mux.HandleFunc("/ui/", u.open(func(w http.ResponseWriter, r *http.Request) error {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			other := r.Clone(r.Context())
			other.Method = m
			if _, p := mux.Handler(other); m != r.Method && p != "/ui/" && p != "" {
				w.Header().Set("Allow", m)
				return &httpapi.Error{Code: httpapi.CodeMethodNotAllowed, Message: r.Method + " is not allowed here (actions are POST forms)"}
			}
		}
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: "no such page; start from the overview"}
	}))
	return securityHeaders(mux)
}

// systemPage mounts the page of an optional system's items (request-queue endpoints, waiting
// rooms), GET /ui/<name>, with the live numbers read, and its JSON twin GET /ui/api/<name>, which
// the page polls for them. Without the system (enabled false) the page says so and the twin
// answers off.
func systemPage[T any](u *UI, page func(pattern string, h handler), name, title, listKey string, enabled bool,
	off error, read func(context.Context) ([]T, live, error),
) {
	page("GET /ui/"+name, func(w http.ResponseWriter, r *http.Request) error {
		data := map[string]any{"Enabled": enabled, "Poll": "/ui/api/" + name}
		if enabled {
			items, l, err := read(r.Context())
			if err != nil {
				return err
			}
			data[listKey], data["Live"] = items, l
		}
		u.render(w, r, http.StatusOK, name, title, data)
		return nil
	})
	page("GET /ui/api/"+name, func(w http.ResponseWriter, r *http.Request) error {
		if !enabled {
			return off
		}
		_, l, err := read(r.Context())
		if err != nil {
			return err
		}
		return writeLive(w, l)
	})
}

// securityHeaders keeps the dashboard out of frames and stops it from loading anything that is
// not its own.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		next.ServeHTTP(w, r)
	})
}

// open serves a handler that needs no session (the login page).
func (u *UI) open(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			u.renderError(w, r, err)
		}
	}
}

// guard serves a handler behind the session: a page without one goes to the login page (or, with
// no admin token, gets a session at once); JSON and POSTs are refused. Every POST must carry the
// session's CSRF token.
func (u *UI) guard(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok, err := u.sessions.fromRequest(r)
		if err == nil && ok && sess.ns != "" {
			// A scoped session ends with its token.
			if ok, err = u.tokenAlive(r.Context(), sess); err == nil && !ok {
				err = u.sessions.end(r.Context(), sess)
			}
		}
		if err != nil {
			u.renderError(w, r, err)
			return
		}
		if !ok {
			switch {
			case u.cfg.AdminToken == "" && r.Method == http.MethodGet:
				if sess, err = u.sessions.issue(w, r, "", ""); err != nil {
					u.renderError(w, r, err)
					return
				}
			case r.Method == http.MethodGet && !isAPI(r):
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			default:
				u.renderError(w, r, &httpapi.Error{Code: httpapi.CodeUnauthenticated, Message: "log in to the dashboard first (/ui/login)"})
				return
			}
		}
		if sess.ns != "" && !inScope(r, sess) {
			u.renderError(w, r, errOutOfScope)
			return
		}
		if r.Method == http.MethodPost {
			if err := checkCSRF(r, sess); err != nil {
				u.renderError(w, r, err)
				return
			}
		}
		r = r.WithContext(context.WithValue(r.Context(), sessionKeyCtx{}, sess))
		if err := h(w, r); err != nil {
			u.renderError(w, r, err)
		}
	}
}

func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/ui/api/") }

// renderError answers err: the native JSON shape under /ui/api/, else an HTML page with the
// registry's status and message.
func (u *UI) renderError(w http.ResponseWriter, r *http.Request, err error) {
	if isAPI(r) {
		httpapi.WriteError(w, r, err)
		return
	}
	e := httpapi.ErrorFor(r, err)
	if e == nil {
		return
	}
	if httpapi.StateOf(r.Context()) == nil && e.Code == httpapi.CodeInternal {
		// No server middleware noted it for the access log: log it here.
		u.log.ErrorContext(r.Context(), "dashboard request failed", "path", r.URL.Path, "error", err)
	}
	httpapi.SetRetryAfter(w, e.RetryAfter)
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	u.render(w, r, e.Status(), "error", "Error", map[string]any{"Code": e.Code, "Message": msg})
}
