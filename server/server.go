// Package server is Sluice's HTTP server and the composition root of its HTTP surface: it owns
// the listeners (public and admin), the middleware (request ids, body limits, panic recovery,
// access log, metrics), authentication (namespace tokens, the admin token), the rendering of
// errors, and the embedded Redis that lets `sluice server` run with no configuration at all.
//
// Each system's routes live in a package of their own, which the server mounts:
//
//   - server/jobs: the native job API, /v1/ns/{ns}/... (declared as httpapi.Route values, wrapped
//     here with token authentication, per-token limits and the native error writer);
//   - server/tasks: the request queue (package relay), /v1/tasks and /v1/permits/check on the
//     public listener and /v1/endpoints on the admin one; relay.go here builds the relay client,
//     its dispatcher and archive, which Serve starts and stops with the listeners;
//   - server/lmstfy: the lmstfy-compatible API, /api/... and its admin routes (its own shapes);
//   - admin.go here: namespaces, tokens and their limits on the admin listener.
//
// Tenancy (namespaces, tokens, limits) is server/tenant; what route packages share (the error
// registry, JSON helpers, Route, the rate-limit wrapper) is server/internal/httpapi.
// docs/server.md is the guide, and its section "Adding a system's routes" says how a new system
// plugs in.
package server

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/relay/mysqlarchive"
	"github.com/sluicehq/sluice/server/callbacks"
	"github.com/sluicehq/sluice/server/internal/authguard"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/lmstfy"
	"github.com/sluicehq/sluice/server/rooms"
	"github.com/sluicehq/sluice/server/tasks"
	"github.com/sluicehq/sluice/server/tenant"
	"github.com/sluicehq/sluice/server/ui"
	"github.com/sluicehq/sluice/waitroom"
)

// Server is one Sluice server instance. Several instances may share one Redis (and Prefix).
type Server struct {
	cfg       Config
	log       *slog.Logger
	rdb       redis.UniversalClient
	queue     *queue.Client
	tokens    *tenant.TokenStore
	limits    *tenant.LimitStore
	quotas    *tenant.QuotaStore
	large     *largeResponses // concurrent large answers per client address
	deletions *tenant.DeletionStore
	// deleteInline is how long a DELETE of a namespace works on it before it answers 202 and
	// leaves the rest to the deleter (nsdelete.go). 1s; tests shorten it.
	deleteInline time.Duration
	limiter      *httpapi.Limiter
	jobs         *jobs.API
	lmstfy       *lmstfy.API
	namespaces   *tenant.NamespaceStore
	waitroom     *waitroom.Client
	rooms        *rooms.API
	// deliverer sends due callback jobs; callbacks serves their settings on the admin listener.
	deliverer *callback.Deliverer
	callbacks *callbacks.API
	ui        *ui.UI
	// relay is the request queue (server/tasks, the dashboard); dispatcher makes its offline calls.
	relay      *relay.Client
	dispatcher *relay.Dispatcher // nil when RelayWorkers is negative
	archive    *mysqlarchive.Archive
	tasks      *tasks.API
	metrics    *metrics
	requestIDs *requestIDs
	// guard limits failed authentications per client address; proxies are the trusted proxies
	// that name a request's client.
	guard   *authguard.Guard
	proxies proxies
	// onUnavailable counts a request answered unavailable (made once: a method value allocates).
	onUnavailable func()
	embedded      *embeddedRedis // nil with an external Redis
	// tracer exports the server's spans (nil: tracing off); Close flushes it.
	tracer *sdktrace.TracerProvider
	// lifeCtx is New's context without its cancellation: the values Close's span flush runs with
	// (Close takes no context; the flush is bounded on its own).
	lifeCtx context.Context
	// services are the background loops (maintainers, deliverer, sampler, dispatcher) in the order
	// Serve starts them; it stops them in reverse once the listeners have drained.
	services []startstop.Service

	// deleteScans are where this instance's namespace deletions stand in their queue registries.
	deleteScans deleteScans

	public http.Handler
	admin  http.Handler
	// publicLean serves the requests of proxy_rooms on the lean loop (lean.go); nil without
	// proxy_rooms.
	publicLean *leanPublic
	leanServer atomic.Pointer[waitroom.ProxyServer] // the public listener's, once Serve made it
	// publicAddr is the public listener's address once Serve has it (the dashboard's hints show
	// it).
	publicAddr atomic.Pointer[string]

	// drainCtx ends when a graceful shutdown starts: blocked consumes return at once.
	drainCtx  context.Context
	drain     context.CancelFunc
	closeOnce sync.Once
	closeErr  error
}

// New connects to Redis (or starts the embedded one), checks it is fit for a queue, and returns
// a server ready to Run. Close it when done.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	s.drainCtx, s.drain = context.WithCancel(context.WithoutCancel(ctx))
	s.lifeCtx = context.WithoutCancel(ctx)
	tp, err := newTracerProvider(ctx, cfg.Tracing)
	if err != nil {
		return nil, err
	}
	s.tracer = tp
	if cfg.RedisURL == "" {
		emb, err := startEmbedded(ctx, cfg)
		if err != nil {
			return nil, err
		}
		s.embedded = emb
		if s.rdb, err = redisx.NewClient(emb.url); err != nil {
			_ = s.closeStore()
			return nil, fmt.Errorf("server: %w", err)
		}
	} else {
		rdb, err := redisx.NewClient(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		s.rdb = rdb
		if err := checkRedis(ctx, rdb, s.log); err != nil {
			_ = rdb.Close()
			return nil, err
		}
	}
	s.large = newLargeResponses(cfg.LargeResponseBytes, cfg.MaxLargeResponsesPerClient)
	s.quotas = tenant.NewQuotaStore(s.rdb, cfg.Prefix, cfg.NamespaceQuotas, cfg.TokenCacheTTL)
	q, err := queue.NewClient(s.rdb, queue.Config{
		QueueQuota: func(ctx context.Context, ns string) (int64, error) {
			q, err := s.quotas.Of(ctx, ns)
			return q.MaxQueues, err
		},
		ScheduleQuota: func(ctx context.Context, ns string) (int64, error) {
			q, err := s.quotas.Of(ctx, ns)
			return q.MaxSchedules, err
		},
		StorageQuota: func(ctx context.Context, ns string) (queue.StorageQuota, error) {
			q, err := s.quotas.Of(ctx, ns)
			return queue.StorageQuota{Jobs: q.MaxStoredJobs, Bytes: q.MaxStoredBytes}, err
		},
		Prefix:            cfg.Prefix,
		MaxPayloadBytes:   int(cfg.MaxBodyBytes),
		MaxConsumeBytes:   int(cfg.MaxConsumeBytes),
		ReplicaAcks:       cfg.ReplicaAcks,
		ReplicaAckTimeout: cfg.ReplicaAckTimeout,
		Logger:            s.log,
		TracerProvider:    s.tracerProvider(),
	})
	if err != nil {
		_ = s.closeStore()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.queue = q
	s.namespaces = tenant.NewNamespaceStore(s.rdb, cfg.Prefix)
	s.tokens = tenant.NewTokenStore(s.rdb, cfg.Prefix, s.namespaces, cfg.TokenCacheTTL)
	s.tokens.UseQuotas(s.quotas)
	s.deletions = tenant.NewDeletionStore(s.rdb, cfg.Prefix, cfg.TokenCacheTTL)
	s.deleteInline = time.Second
	s.deleteScans.batch = deleteQueueBatch
	s.tokens.UseDeletions(s.deletions)
	s.limits = tenant.NewLimitStore(s.rdb, cfg.Prefix, cfg.TokenCacheTTL, s.log)
	// Tokens written before each namespace had its token index get their entries (a batch per
	// call; idempotent, so every start runs it).
	if n, err := s.tokens.IndexTokens(ctx); err != nil {
		_ = s.closeStore()
		return nil, fmt.Errorf("server: %w", err)
	} else if n > 0 {
		s.log.Debug("token indexes checked", "tokens", n)
	}
	s.metrics = newMetrics(s)
	s.onUnavailable = s.metrics.redisErrors.Inc
	if err := s.setupAuthGuard(); err != nil {
		_ = s.Close() //nolint:contextcheck // cleanup of a failed start; Close bounds its own span flush
		return nil, err
	}
	// The request queue before the deliverer, whose callbacks under an endpoint's target URL take
	// that endpoint's slots, and before the dashboard, which shows its endpoints through the same
	// client.
	if err := s.startRelay(ctx); err != nil {
		_ = s.Close() //nolint:contextcheck // cleanup of a failed start; Close bounds its own span flush
		return nil, err
	}
	if err := s.setupCallbacks(); err != nil {
		_ = s.Close() //nolint:contextcheck // cleanup of a failed start; Close bounds its own span flush
		return nil, err
	}
	s.limiter = &httpapi.Limiter{Store: s.limits, Log: s.log, OnDenied: func(ns string, dir tenant.LimitDir) {
		s.metrics.rateLimited.WithLabelValues(ns, dir.String()).Inc()
	}}
	s.requestIDs = newRequestIDs()
	s.jobs = jobs.New(jobs.Config{Queue: q, MaxConsumeTimeout: cfg.MaxConsumeTimeout, Drain: s.drainCtx,
		CallbackDestinations: s.callbackDestinations, WatchConsumer: s.watchConsumer})
	s.lmstfy = lmstfy.New(lmstfy.Config{
		Queue: q, Tokens: s.tokens, Limits: s.limits, Limiter: s.limiter,
		MaxConsumeTimeout: cfg.MaxConsumeTimeout, Drain: s.drainCtx, WatchConsumer: s.watchLmstfyConsumer,
	})
	if err := s.setupRooms(ctx); err != nil {
		_ = s.Close() //nolint:contextcheck // cleanup of a failed start; Close bounds its own span flush
		return nil, err
	}
	if err := s.setupUI(); err != nil {
		_ = s.Close() //nolint:contextcheck // cleanup of a failed start; Close bounds its own span flush
		return nil, err
	}
	s.services = s.backgroundServices()
	pub, err := s.publicMux()
	if err != nil {
		_ = s.Close() //nolint:contextcheck // cleanup of a failed start; Close bounds its own span flush
		return nil, err
	}
	s.public = s.traced(s.wrap("public", pub, false))
	if s.rooms.HasProxies() {
		s.publicLean = s.newLeanPublic(pub)
	}
	s.admin = s.wrap("admin", s.adminMux(), true)
	return s, nil
}

// setupRooms makes the waiting room client (docs/waitroom.md) and creates the rooms of the
// config file.
func (s *Server) setupRooms(ctx context.Context) error {
	keys, err := rooms.PassKeys(ctx, s.rdb, s.cfg.Prefix, s.cfg.RoomPassKeys)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	var tokenKeys []ed25519.PrivateKey
	if s.cfg.RoomPassTokens {
		if tokenKeys, err = rooms.PassTokenKeys(ctx, s.rdb, s.cfg.Prefix, s.cfg.RoomPassTokenKeys); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	s.waitroom, err = waitroom.NewClient(s.rdb, waitroom.Config{
		Prefix: s.cfg.Prefix, PassKeys: keys, PassTokenKeys: tokenKeys, BindPasses: s.cfg.RoomPassBind, Logger: s.log,
		UpstreamDialTimeout: s.cfg.RoomUpstreamDialTimeout, UpstreamHeaderTimeout: s.cfg.RoomUpstreamHeaderTimeout,
		ArrivalsPerMinute: s.cfg.RoomArrivalsPerMinute, ClientAddr: s.clientAddr,
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	names := make([]string, 0, len(s.cfg.Rooms))
	for name := range s.cfg.Rooms {
		names = append(names, name)
	}
	slices.Sort(names)
	if err := rooms.ApplyFileRooms(ctx, s.waitroom, names, s.cfg.Rooms); err != nil {
		return fmt.Errorf("server: config rooms: %w", err)
	}
	hosts, err := rooms.ParseProxyHosts(s.cfg.ProxyRooms)
	if err != nil {
		return fmt.Errorf("server: proxy_rooms: %w", err)
	}
	s.rooms = rooms.New(rooms.Config{Client: s.waitroom, ProxyHosts: hosts})
	return nil
}

// backgroundServices lists the server's background loops in the order Serve starts them: the job
// queue's and the waiting rooms' maintainers, the scheduler of schedules, the callback deliverer
// (stopped after the listeners drained, it gives back the callbacks not yet sent and lets the ones
// in flight finish), the dashboard's throughput sampler and the request queue's dispatcher (its
// calls under way finish and are stored).
func (s *Server) backgroundServices() []startstop.Service {
	services := []startstop.Service{
		queue.NewMaintainer(s.queue, queue.MaintainerConfig{Interval: s.cfg.MaintainInterval, Logger: s.log}),
		waitroom.NewMaintainer(s.waitroom, waitroom.MaintainerConfig{}),
		s.newScheduler(),
		s.deliverer,
		s.ui.Sampler(),
		s.ui.Presence(),
		&nsDeleter{s: s, log: s.log},
	}
	if s.dispatcher != nil { // RelayWorkers negative: no dispatcher here
		services = append(services, s.dispatcher)
	}
	return services
}

// PublicHandler serves the public API: /v1, the lmstfy-compatible routes, /healthz and /readyz.
func (s *Server) PublicHandler() http.Handler { return s.public }

// AdminHandler serves the admin API: namespaces, tokens, /metrics and lmstfy's admin routes.
func (s *Server) AdminHandler() http.Handler { return s.admin }

// Config returns the server's configuration with defaults filled in.
func (s *Server) Config() Config { return s.cfg }

func (s *Server) publicMux() (*http.ServeMux, error) {
	mux := http.NewServeMux()
	s.mount(mux, s.publicRoutes())
	s.lmstfy.MountPublic(mux)
	if err := s.rooms.MountProxies(mux, newProxyRoute); err != nil {
		return nil, fmt.Errorf("server: proxy_rooms: %w", err)
	}
	return mux, nil
}

func (s *Server) adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	s.mount(mux, s.adminRoutes())
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.Handle("/ui/", s.ui.Handler())
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	s.lmstfy.MountAdmin(mux)
	return mux
}

// healthRoutes are on both listeners.
func (s *Server) healthRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /healthz", Handler: s.healthz},
		{Pattern: "GET /readyz", Handler: s.readyz},
	}
}

// healthz answers while the process serves requests.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// Run listens on PublicAddr and AdminAddr and serves until ctx ends, then shuts down gracefully
// (Serve). It does not Close the server.
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	pub, err := lc.Listen(ctx, "tcp", s.cfg.PublicAddr)
	if err != nil {
		return fmt.Errorf("server: public listener: %w", err)
	}
	adm, err := lc.Listen(ctx, "tcp", s.cfg.AdminAddr)
	if err != nil {
		_ = pub.Close()
		return fmt.Errorf("server: admin listener: %w", err)
	}
	return s.Serve(ctx, pub, adm)
}

// Serve serves the public and admin APIs on the listeners until ctx ends. Then it shuts down
// gracefully: it stops accepting connections, releases blocked consumes (they answer with no
// jobs), waits up to ShutdownTimeout for in-flight requests and stops the background services
// (maintainers, deliverer, sampler, dispatcher), which it started before it listened. The
// listeners are closed when it returns.
func (s *Server) Serve(ctx context.Context, public, admin net.Listener) error {
	servers := []httpServer{
		s.publicServer(&http.Server{Handler: s.public, ReadHeaderTimeout: s.cfg.ReadHeaderTimeout, IdleTimeout: s.cfg.IdleTimeout, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}),
		&http.Server{Handler: s.admin, ReadHeaderTimeout: s.cfg.ReadHeaderTimeout, IdleTimeout: s.cfg.IdleTimeout, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)},
	}
	listeners := []net.Listener{public, admin}
	addr := public.Addr().String()
	s.publicAddr.Store(&addr)
	// The HTTP servers close the listeners when they stop; this closes them on the early returns
	// too (a second Close is harmless).
	defer func() {
		_ = public.Close()
		_ = admin.Close()
	}()
	if err := startstop.StartAll(context.WithoutCancel(ctx), s.services...); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	// Deferred before the shutdown below runs: the services stop after the listeners drained.
	defer startstop.StopAll(s.services...)
	s.log.Info("sluice server listening", "public", public.Addr().String(), "admin", admin.Addr().String())
	if s.embedded != nil {
		if err := s.welcome(ctx, public.Addr().String(), admin.Addr().String()); err != nil {
			return fmt.Errorf("server: embedded mode: %w", err)
		}
	} else {
		s.firstTokenHint(ctx, admin.Addr().String())
	}

	errc := make(chan error, len(servers))
	for i, hs := range servers {
		go func() {
			if err := hs.Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
				return
			}
			errc <- nil
		}()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.log.Info("sluice server shutting down")
	s.drain()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, hs := range servers {
		wg.Go(func() {
			if err := hs.Shutdown(sctx); err != nil {
				s.log.Warn("graceful shutdown cut short; closing connections", "error", err)
				_ = hs.Close()
			}
		})
	}
	wg.Wait()
	// Both Serve goroutines have returned (Shutdown makes them); collect them.
	for range len(servers) - boolInt(serveErr != nil) {
		if err := <-errc; err != nil && serveErr == nil {
			serveErr = err
		}
	}
	if serveErr != nil {
		return fmt.Errorf("server: %w", serveErr)
	}
	s.log.Info("sluice server stopped")
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Close releases everything the server holds: blocked consumes, the queue client, the Redis
// client and the embedded Redis (stopped last, so its data is flushed). Call it after Run.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.drain()
		startstop.StopAll(s.services...) // stopped already when Serve returned
		if s.relay != nil {
			_ = s.relay.Close()
		}
		if s.archive != nil {
			_ = s.archive.Close()
		}
		if s.queue != nil {
			_ = s.queue.Close()
		}
		s.closeErr = s.closeStore()
		if s.tracer != nil {
			ctx, cancel := context.WithTimeout(s.lifeCtx, 5*time.Second)
			defer cancel()
			_ = s.tracer.Shutdown(ctx) // flushes the spans not yet sent
		}
	})
	return s.closeErr
}

func (s *Server) closeStore() error {
	var errs []error
	if s.rdb != nil {
		if err := s.rdb.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if s.embedded != nil {
		errs = append(errs, s.embedded.stop())
	}
	return errors.Join(errs...)
}
