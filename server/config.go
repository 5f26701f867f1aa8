package server

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"time"

	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/rooms"
	"github.com/sluicehq/sluice/server/tasks"
	"github.com/sluicehq/sluice/server/tenant"
)

// Config configures a Server. The zero value is usable: every field has a default, and with no
// RedisURL the server runs on an embedded Redis (see docs/server.md, "Embedded mode").
type Config struct {
	// RedisURL is the Redis to use (redis://, rediss://, redis+sentinel://, redis+cluster://).
	// Default "": the embedded default, a managed redis-server child when RedisServerPath is
	// found, else an in-process store that loses everything on restart.
	RedisURL string

	// Prefix starts every key the server writes. Default "sluice".
	Prefix string

	// PublicAddr is the listen address of the public API (/v1, lmstfy-compatible routes, health).
	// Default ":7777".
	PublicAddr string

	// AdminAddr is the listen address of the admin API (namespaces, tokens, /metrics).
	// Default "127.0.0.1:7778". A non-loopback address needs an AdminToken.
	AdminAddr string

	// AdminToken is the bearer token admin requests must carry: at least 24 printable ASCII
	// characters, 10 of them different, not a piece repeated (NewAdminToken makes one). Default "":
	// admin requests need no token, which is only allowed while AdminAddr is a loopback address.
	AdminToken string

	// TrustedProxies are the reverse proxies in front of the server: comma-separated addresses or
	// CIDR ranges. A request whose connection comes from one is taken to come from the client its
	// X-Forwarded-For names (the nearest address that is not a trusted proxy), and over TLS when
	// its X-Forwarded-Proto says https. Default "": none, so a client's address is its
	// connection's whatever headers it sends.
	TrustedProxies string

	// AuthFailureLimit is how many failed authentications (dashboard login, admin token, namespace
	// tokens) a client address may make within a minute; each further one makes it wait, twice as
	// long each time (docs/server.md, "Failed authentications"). Default 10.
	AuthFailureLimit int

	// AuthBackoffMax caps a client's wait after failed authentications. Default 15m.
	AuthBackoffMax time.Duration

	// UISessionTTL is how long a dashboard login lasts at most. Default 12h.
	UISessionTTL time.Duration

	// UISessionIdleTimeout ends a dashboard session that made no request for that long. Default
	// 30m.
	UISessionIdleTimeout time.Duration

	// DataDir is where the managed redis-server keeps its append-only files in embedded mode.
	// Default "./sluice-data".
	DataDir string

	// RedisServerPath is the redis-server binary started in embedded mode; a bare name is looked
	// up in PATH. Default "redis-server".
	RedisServerPath string

	// MaxBodyBytes bounds a request body (and so a job's payload). Default 1 MiB.
	MaxBodyBytes int64

	// BodyReadTimeout bounds how long a request body may take to arrive once the handler starts
	// reading it; a slower body ends the request with 400 invalid_argument. Default 30s.
	BodyReadTimeout time.Duration

	// WriteTimeout bounds each write of an answer: a client that reads so slowly that one write
	// does not reach it within this time loses its connection. Waiting before the answer starts
	// (a long poll) is not bounded by it. Default 30s.
	WriteTimeout time.Duration

	// LargeResponseBytes is the size from which an answer counts as large: each client address
	// receives at most MaxLargeResponsesPerClient of them at once from one server instance, and
	// gets 429 too_many_large_responses (Retry-After: 1) past that. Default 256 KiB.
	LargeResponseBytes int64
	// MaxLargeResponsesPerClient is the most large answers one client address receives at once.
	// Default 8.
	MaxLargeResponsesPerClient int

	// ReadHeaderTimeout bounds how long a request's headers may take to arrive. Default 10s.
	ReadHeaderTimeout time.Duration

	// IdleTimeout ends a keep-alive connection that sent no request for that long. Default 2m.
	IdleTimeout time.Duration

	// MaxConsumeTimeout bounds the "timeout" of a blocking consume. Default 60s.
	MaxConsumeTimeout time.Duration

	// MaxConsumeBytes bounds the jobs one consume answers, in bytes of their records
	// (queue.Config.MaxConsumeBytes): fewer jobs come back when they are large. Default 4 MiB.
	MaxConsumeBytes int64

	// ShutdownTimeout bounds how long a graceful shutdown waits for in-flight requests before it
	// closes their connections. Default 30s.
	ShutdownTimeout time.Duration

	// TokenCacheTTL is how long a token lookup (and a token's rate limit) is cached in-process,
	// which bounds how long a revoked token keeps working, and a changed limit takes to apply, on
	// other instances. Default 500ms; at most 1s.
	TokenCacheTTL time.Duration

	// NamespaceQuotas are the quotas of a namespace that set none of its own on the admin API
	// (PUT /v1/namespaces/{ns}/quotas): the most queues, tokens, stored jobs and stored bytes it
	// may hold. Default 0: no quota.
	NamespaceQuotas tenant.Quotas

	// MetricsMaxQueues bounds the queues whose depths and counters a /metrics scrape reports (the
	// first ones in namespace and name order). Default 1000.
	MetricsMaxQueues int

	// MaintainInterval is how often the server's maintainer promotes due jobs and reaps expired
	// leases of queues no consumer is reading. Default 500ms.
	MaintainInterval time.Duration

	// UISampleInterval is how often the dashboard samples the queues' counters for its throughput
	// charts (docs/dashboard.md). Default 10s.
	UISampleInterval time.Duration

	// RoomPassKeys sign the waiting rooms' visitor and pass cookies: comma-separated, each at least
	// 32 bytes, the first signing (two during a rotation). Default "": a key the servers sharing
	// the Redis make once and keep there (<prefix>:waitroom:pass_key).
	RoomPassKeys string

	// RoomPassTokens issues the waiting rooms' passes as Ed25519-signed JWTs that the protected
	// site can verify with the public keys served at /v1/rooms/jwks.json (docs/waitroom.md, "Token
	// passes"). Default false: HMAC passes, checked by Sluice only.
	RoomPassTokens bool

	// RoomPassTokenKeys are the Ed25519 keys of token passes: comma-separated 32-byte seeds in
	// unpadded base64url (`sluice token gen`), the first signing, at most three (rotation).
	// Default "": one key the servers sharing the Redis make once and keep there
	// (<prefix>:waitroom:pass_token_key).
	RoomPassTokenKeys string

	// RoomPassBind binds each token pass to its browser's visitor cookie, so a copied pass alone
	// admits nobody. Needs RoomPassTokens. Default false.
	RoomPassBind bool

	// ProxyRooms names the hosts the public listener serves through a waiting room as a reverse
	// proxy to the room's upstream: "host=room,host=room", "*=room" for every request no other
	// route takes. Default "": none.
	ProxyRooms string

	// RoomUpstreamDialTimeout and RoomUpstreamHeaderTimeout bound a room's reverse proxy: its
	// connection to the room's upstream (default 30s) and its wait for the upstream's response
	// header (default 0: no bound, so long polls work). See waitroom.Config.
	RoomUpstreamDialTimeout, RoomUpstreamHeaderTimeout time.Duration

	// RoomArrivalsPerMinute is how many new visitors one client address (an IPv6 address's /64;
	// behind a reverse proxy, the address TrustedProxies names) may put in a room's line per
	// minute, unless the room's arrivals_per_minute says otherwise. Default 60; -1: no limit.
	RoomArrivalsPerMinute int

	// Rooms are waiting rooms to create (or replace) at start, by name: the config file's "rooms".
	// Default none.
	Rooms map[string]rooms.RoomJSON

	// CallbackWorkers is how many callbacks (delayed jobs delivered to a URL, docs/callbacks.md)
	// this instance sends at once. Default 32.
	CallbackWorkers int

	// CallbackAllowPrivate lets every namespace's callbacks reach loopback and private addresses
	// (otherwise only namespaces whose callback settings allow it may). Default false.
	CallbackAllowPrivate bool

	// CallbackMaxResultBytes bounds how much of a callback's response is read and kept as the
	// job's result. Default 64 KiB.
	CallbackMaxResultBytes int64

	// CallbackDestinationConcurrency caps the callbacks in flight to one destination (scheme,
	// host, port) across every instance. Default 0: no cap.
	CallbackDestinationConcurrency int

	// CallbackDestinationRate caps the callbacks started per second to one destination across
	// every instance. Default 0: no cap.
	CallbackDestinationRate int
	// ReplicaAcks is how many replicas must acknowledge a published job before the publish
	// answers (queue.Config.ReplicaAcks): with Sentinel and 1, an acknowledged job survives the
	// primary's death. Default 0.
	ReplicaAcks int

	// ReplicaAckTimeout bounds the wait for ReplicaAcks. Default 1s.
	ReplicaAckTimeout time.Duration

	// RelayWorkers is the most offline calls of the request queue this instance makes at once
	// (each endpoint's concurrency still holds across every instance). Negative: this instance
	// runs no dispatcher and no relay maintenance (it still serves /v1/tasks). Default 64.
	RelayWorkers int

	// RelayAllowPrivate lets offline calls go to loopback and private addresses (endpoints on
	// the same host or network). Default false: such calls are refused and fail for good.
	RelayAllowPrivate bool

	// RelayPermitKeys sign and verify online tasks' permits: the first signs, every one verifies
	// (rotation: add the new key first, drop the old one once its permits expired). Each at least
	// 32 bytes. Default: a key generated by the first instance and stored in Redis (logged loudly).
	RelayPermitKeys []string

	// RelayGrantKeys verify priority grants signed by the application's backend. Default none:
	// grants are ignored and a task's priority is capped by its token's max_priority.
	RelayGrantKeys []string

	// RelayDefaultMaxPriority caps the priority of tasks submitted with a token that has no
	// max_priority of its own (0..255): a higher priority in the body is lowered to it. Default 0:
	// raising a task's priority takes a token with a max_priority, or a priority grant.
	RelayDefaultMaxPriority int

	// RelayEndpoints are endpoints applied (created or replaced) at start, by name. Default none.
	RelayEndpoints map[string]tasks.EndpointBody

	// RelayPendingRetention, RelayFinishedRetention and RelayReadRetention are how long Redis
	// keeps a waiting task, a finished one, and a finished one after its final status was read.
	// Defaults 3h, 1h, 20s.
	RelayPendingRetention, RelayFinishedRetention, RelayReadRetention time.Duration

	// RelayIdempotencyRetention is how long an Idempotency-Key of POST /v1/tasks keeps answering
	// with the task it first created. Default 24h.
	RelayIdempotencyRetention time.Duration

	// ArchiveDSN, when set, is a MySQL/MariaDB database (go-sql-driver form,
	// user:pass@tcp(host:3306)/db) that finished tasks are archived to; a task no longer in
	// Redis is read from it. The table is created at start. Default "": no archive.
	ArchiveDSN string

	// ArchiveRetention is how long archived tasks are kept (from their creation). Default 72h.
	ArchiveRetention time.Duration

	// Tracing is where OpenTelemetry traces go (docs/tracing.md). Default: the OTEL_* environment
	// variables, else tracing off.
	Tracing TracingConfig

	// Logger receives the server's logs. Default: a text logger on stderr at level info.
	Logger *slog.Logger

	// Out receives the human-readable text of embedded mode (the first-start token and curl lines).
	// Default os.Stderr.
	Out io.Writer

	// authFailureWindow is the span AuthFailureLimit counts over: a minute, longer in tests that
	// drive a browser through the failures on a loaded machine.
	authFailureWindow time.Duration
	// authBackoff is the first wait after the free failures: a second (the guard's default),
	// longer in tests that must see a request refused during the wait after a browser's round
	// trips on a loaded machine.
	authBackoff time.Duration
}

// withDefaults returns a copy of c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sluice")
	c.PublicAddr = cmp.Or(c.PublicAddr, ":7777")
	c.AdminAddr = cmp.Or(c.AdminAddr, "127.0.0.1:7778")
	c.DataDir = cmp.Or(c.DataDir, "./sluice-data")
	c.RedisServerPath = cmp.Or(c.RedisServerPath, "redis-server")
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, 1<<20)
	c.BodyReadTimeout = cmp.Or(c.BodyReadTimeout, 30*time.Second)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, 30*time.Second)
	c.LargeResponseBytes = cmp.Or(c.LargeResponseBytes, 256<<10)
	c.MaxLargeResponsesPerClient = cmp.Or(c.MaxLargeResponsesPerClient, 8)
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, 10*time.Second)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, 2*time.Minute)
	c.MaxConsumeTimeout = cmp.Or(c.MaxConsumeTimeout, 60*time.Second)
	c.MaxConsumeBytes = cmp.Or(c.MaxConsumeBytes, 4<<20)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, 30*time.Second)
	c.TokenCacheTTL = cmp.Or(c.TokenCacheTTL, 500*time.Millisecond)
	c.MetricsMaxQueues = cmp.Or(c.MetricsMaxQueues, 1000)
	c.MaintainInterval = cmp.Or(c.MaintainInterval, 500*time.Millisecond)
	c.AuthFailureLimit = cmp.Or(c.AuthFailureLimit, 10)
	c.AuthBackoffMax = cmp.Or(c.AuthBackoffMax, 15*time.Minute)
	c.UISessionTTL = cmp.Or(c.UISessionTTL, 12*time.Hour)
	c.UISessionIdleTimeout = cmp.Or(c.UISessionIdleTimeout, 30*time.Minute)
	c.CallbackWorkers = cmp.Or(c.CallbackWorkers, 32)
	c.CallbackMaxResultBytes = cmp.Or(c.CallbackMaxResultBytes, 64<<10)
	c.ReplicaAckTimeout = cmp.Or(c.ReplicaAckTimeout, time.Second)
	c.RoomUpstreamDialTimeout = cmp.Or(c.RoomUpstreamDialTimeout, 30*time.Second)
	c.RoomArrivalsPerMinute = cmp.Or(c.RoomArrivalsPerMinute, 60)
	if c.RelayWorkers == 0 {
		c.RelayWorkers = 64
	}
	c.RelayPendingRetention = cmp.Or(c.RelayPendingRetention, 3*time.Hour)
	c.RelayFinishedRetention = cmp.Or(c.RelayFinishedRetention, time.Hour)
	c.RelayReadRetention = cmp.Or(c.RelayReadRetention, 20*time.Second)
	c.RelayIdempotencyRetention = cmp.Or(c.RelayIdempotencyRetention, 24*time.Hour)
	c.ArchiveRetention = cmp.Or(c.ArchiveRetention, 72*time.Hour)
	if len(c.RelayEndpoints) == 0 {
		c.RelayEndpoints = nil
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if c.Out == nil {
		c.Out = os.Stderr
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if err := c.Tracing.validate(); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	if !tenant.ValidName(c.Prefix) {
		errs = append(errs, fmt.Errorf("config: prefix %q %s", c.Prefix, tenant.NameRule))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, errors.New("config: max_body_bytes must be at least 1024"))
	}
	if c.BodyReadTimeout < time.Millisecond {
		errs = append(errs, errors.New("config: body_read_timeout must be at least 1ms"))
	}
	if c.LargeResponseBytes < 1024 || c.MaxLargeResponsesPerClient < 1 {
		errs = append(errs, errors.New("config: large_response_bytes must be at least 1024 and max_large_responses_per_client at least 1"))
	}
	if c.WriteTimeout < time.Millisecond || c.ReadHeaderTimeout < time.Millisecond || c.IdleTimeout < time.Millisecond {
		errs = append(errs, errors.New("config: write_timeout, read_header_timeout and idle_timeout must each be at least 1ms"))
	}
	if c.MaxConsumeTimeout < time.Millisecond {
		errs = append(errs, errors.New("config: max_consume_timeout must be at least 1ms"))
	}
	if c.MaxConsumeBytes < 1024 {
		errs = append(errs, errors.New("config: max_consume_bytes must be at least 1024"))
	}
	if c.ShutdownTimeout < time.Millisecond {
		errs = append(errs, errors.New("config: shutdown_timeout must be at least 1ms"))
	}
	if name := c.NamespaceQuotas.Negative(); name != "" {
		errs = append(errs, fmt.Errorf("config: namespace_%s must be 0 (no quota) or more", name))
	}
	if c.TokenCacheTTL < 0 || c.TokenCacheTTL > time.Second {
		errs = append(errs, errors.New("config: token_cache_ttl must be between 0 and 1s (it bounds how long a revoked token works)"))
	}
	if c.MetricsMaxQueues < 1 {
		errs = append(errs, errors.New("config: metrics_max_queues must be at least 1"))
	}
	if c.MaintainInterval < time.Millisecond {
		errs = append(errs, errors.New("config: maintain_interval must be at least 1ms"))
	}
	if _, err := rooms.ParseProxyHosts(c.ProxyRooms); err != nil {
		errs = append(errs, fmt.Errorf("config: proxy_rooms: %w", err))
	}
	if c.RoomArrivalsPerMinute < -1 || c.RoomArrivalsPerMinute > 10_000 {
		errs = append(errs, fmt.Errorf("config: room_arrivals_per_minute must be -1 (no limit) or between 1 and 10000, got %d", c.RoomArrivalsPerMinute))
	}
	if !c.RoomPassTokens && (c.RoomPassTokenKeys != "" || c.RoomPassBind) {
		errs = append(errs, errors.New("config: room_pass_token_keys and room_pass_bind need room_pass_tokens=true"))
	}
	if c.RoomUpstreamDialTimeout < 0 || c.RoomUpstreamHeaderTimeout < 0 {
		errs = append(errs, errors.New("config: room_upstream_dial_timeout and room_upstream_header_timeout must not be negative"))
	}
	for name, room := range c.Rooms {
		if _, err := room.Config(); err != nil {
			errs = append(errs, fmt.Errorf("config: rooms: %s: %w", name, err))
		}
	}
	if c.CallbackWorkers < 1 || c.CallbackWorkers > 1000 {
		errs = append(errs, errors.New("config: callback_workers must be 1..1000"))
	}
	if c.CallbackMaxResultBytes < 1 {
		errs = append(errs, errors.New("config: callback_max_result_bytes must be at least 1"))
	}
	if c.CallbackDestinationConcurrency < 0 {
		errs = append(errs, errors.New("config: callback_destination_concurrency must not be negative"))
	}
	if c.CallbackDestinationRate < 0 {
		errs = append(errs, errors.New("config: callback_destination_rate must not be negative"))
	}
	if c.ReplicaAcks < 0 {
		errs = append(errs, errors.New("config: replica_acks must not be negative"))
	}
	if c.ReplicaAckTimeout < time.Millisecond {
		errs = append(errs, errors.New("config: replica_ack_timeout must be at least 1ms"))
	}
	for _, k := range append(slices.Clone(c.RelayPermitKeys), c.RelayGrantKeys...) {
		if len(k) < 32 {
			errs = append(errs, errors.New("config: relay_permit_keys and relay_grant_keys: each key must be at least 32 bytes"))
			break
		}
	}
	if c.RelayDefaultMaxPriority < 0 || c.RelayDefaultMaxPriority > relay.MaxPriority {
		errs = append(errs, fmt.Errorf("config: relay_default_max_priority must be 0..%d", relay.MaxPriority))
	}
	if c.ArchiveRetention < 0 {
		errs = append(errs, errors.New("config: archive_retention must not be negative"))
	}
	if _, _, err := net.SplitHostPort(c.PublicAddr); err != nil {
		errs = append(errs, fmt.Errorf("config: public_addr %q: %w", c.PublicAddr, err))
	}
	if c.AdminToken != "" {
		if err := checkAdminToken(c.AdminToken); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := parseProxies(c.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("config: trusted_proxies: %w", err))
	}
	if c.AuthFailureLimit < 1 {
		errs = append(errs, errors.New("config: auth_failure_limit must be at least 1"))
	}
	if c.AuthBackoffMax < time.Second {
		errs = append(errs, errors.New("config: auth_backoff_max must be at least 1s"))
	}
	if c.UISessionTTL < time.Minute || c.UISessionIdleTimeout < time.Minute {
		errs = append(errs, errors.New("config: ui_session_ttl and ui_session_idle_timeout must be at least 1m"))
	}
	if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
		errs = append(errs, fmt.Errorf("config: admin_addr %q: %w", c.AdminAddr, err))
	} else if c.AdminToken == "" && !isLoopback(c.AdminAddr) {
		errs = append(errs, fmt.Errorf("config: admin_addr %q is not a loopback address: set admin_token "+
			"(SLUICE_ADMIN_TOKEN) or bind the admin listener to 127.0.0.1", c.AdminAddr))
	}
	return errors.Join(errs...)
}

// isLoopback reports whether a listen address only accepts local connections.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
