package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/rooms"
)

// Settings is what `sluice server` is configured with: the server's Config plus the logging
// options. LoadSettings fills it from a config file, SLUICE_* environment variables and flags.
type Settings struct {
	Config
	// LogFormat is "text" or "json". Default "text".
	LogFormat string
	// LogLevel is "debug", "info", "warn" or "error". Default "info".
	LogLevel string
}

// Option is one setting: its config file key, its flag (the key with dashes) and its environment
// variable. docs/server.md lists them all; a test keeps it in step.
type Option struct {
	Key     string
	Env     string
	Default string
	Usage   string
	set     func(s *Settings, v string) error
}

// Flag is the option's command-line flag name.
func (o Option) Flag() string { return strings.ReplaceAll(o.Key, "_", "-") }

// Set parses v into the option's field of s.
func (o Option) Set(s *Settings, v string) error {
	if err := o.set(s, v); err != nil {
		return fmt.Errorf("%s: %w", o.Key, err)
	}
	return nil
}

// ConfigFileEnv names the config file when no --config flag does.
const ConfigFileEnv = "SLUICE_CONFIG"

// Options lists every setting of `sluice server`.
func Options() []Option {
	str := func(f func(*Settings) *string) func(*Settings, string) error {
		return func(s *Settings, v string) error { *f(s) = v; return nil }
	}
	dur := func(f func(*Settings) *time.Duration) func(*Settings, string) error {
		return func(s *Settings, v string) error {
			d, err := parseDuration(v)
			*f(s) = d
			return err
		}
	}
	integer := func(set func(*Settings, int64)) func(*Settings, string) error {
		return func(s *Settings, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not an integer", v)
			}
			set(s, n)
			return nil
		}
	}
	boolean := func(f func(*Settings) *bool) func(*Settings, string) error {
		return func(s *Settings, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not true or false", v)
			}
			*f(s) = b
			return nil
		}
	}
	keys := func(f func(*Settings) *[]string) func(*Settings, string) error {
		return func(s *Settings, v string) error {
			k, err := parseKeys(v)
			*f(s) = k
			return err
		}
	}
	return []Option{
		{"redis_url", "SLUICE_REDIS_URL", `""`, "`URL` of the Redis to use: redis://, rediss://, redis+sentinel://, redis+cluster://; empty runs the embedded Redis",
			str(func(s *Settings) *string { return &s.RedisURL })},
		{"prefix", "SLUICE_PREFIX", "sluice", "`prefix` of every Redis key the server writes",
			str(func(s *Settings) *string { return &s.Prefix })},
		{"public_addr", "SLUICE_PUBLIC_ADDR", ":7777", "listen `address` of the public API",
			str(func(s *Settings) *string { return &s.PublicAddr })},
		{"admin_addr", "SLUICE_ADMIN_ADDR", "127.0.0.1:7778", "listen `address` of the admin API and /metrics (a non-loopback address needs admin_token)",
			str(func(s *Settings) *string { return &s.AdminAddr })},
		{"admin_token", "SLUICE_ADMIN_TOKEN", `""`, "bearer `token` of admin requests (24+ varied characters: `sluice token gen` makes one); empty allows none only on a loopback admin_addr",
			str(func(s *Settings) *string { return &s.AdminToken })},
		{"trusted_proxies", "SLUICE_TRUSTED_PROXIES", `""`, "comma-separated `addresses` or CIDR ranges of reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed",
			str(func(s *Settings) *string { return &s.TrustedProxies })},
		{"auth_failure_limit", "SLUICE_AUTH_FAILURE_LIMIT", "10", "failed authentications (`n`) a client address may make in a minute before it must wait, doubling",
			integer(func(s *Settings, n int64) { s.AuthFailureLimit = int(n) })},
		{"auth_backoff_max", "SLUICE_AUTH_BACKOFF_MAX", "15m", "longest wait (`duration`) of a client after failed authentications",
			dur(func(s *Settings) *time.Duration { return &s.AuthBackoffMax })},
		{"ui_session_ttl", "SLUICE_UI_SESSION_TTL", "12h", "longest a dashboard login lasts (`duration`)",
			dur(func(s *Settings) *time.Duration { return &s.UISessionTTL })},
		{"ui_session_idle_timeout", "SLUICE_UI_SESSION_IDLE_TIMEOUT", "30m", "how long (`duration`) an unused dashboard session lasts",
			dur(func(s *Settings) *time.Duration { return &s.UISessionIdleTimeout })},
		{"data_dir", "SLUICE_DATA_DIR", "./sluice-data", "data `directory` of the embedded redis-server",
			str(func(s *Settings) *string { return &s.DataDir })},
		{"redis_server_path", "SLUICE_REDIS_SERVER_PATH", "redis-server", "redis-server `binary` of embedded mode (looked up in PATH); not found: in-process store",
			str(func(s *Settings) *string { return &s.RedisServerPath })},
		{"max_body_bytes", "SLUICE_MAX_BODY_BYTES", "1048576", "largest request body (and so job payload) in `bytes`",
			integer(func(s *Settings, n int64) { s.MaxBodyBytes = n })},
		{"body_read_timeout", "SLUICE_BODY_READ_TIMEOUT", "30s", "longest a request body may take (`duration`) to arrive once it is read; slower: 400",
			dur(func(s *Settings) *time.Duration { return &s.BodyReadTimeout })},
		{"write_timeout", "SLUICE_WRITE_TIMEOUT", "30s", "longest one write of an answer may take (`duration`) to reach the client; slower: the connection is closed",
			dur(func(s *Settings) *time.Duration { return &s.WriteTimeout })},
		{"large_response_bytes", "SLUICE_LARGE_RESPONSE_BYTES", "262144", "size in `bytes` from which an answer counts as large (see max_large_responses_per_client)",
			integer(func(s *Settings, n int64) { s.LargeResponseBytes = n })},
		{"max_large_responses_per_client", "SLUICE_MAX_LARGE_RESPONSES_PER_CLIENT", "8", "most large answers (`n`) one client address receives at once; more: 429 too_many_large_responses",
			integer(func(s *Settings, n int64) { s.MaxLargeResponsesPerClient = int(n) })},
		{"read_header_timeout", "SLUICE_READ_HEADER_TIMEOUT", "10s", "longest a request's headers may take (`duration`) to arrive",
			dur(func(s *Settings) *time.Duration { return &s.ReadHeaderTimeout })},
		{"idle_timeout", "SLUICE_IDLE_TIMEOUT", "2m", "how long (`duration`) a keep-alive connection may wait for its next request",
			dur(func(s *Settings) *time.Duration { return &s.IdleTimeout })},
		{"max_consume_timeout", "SLUICE_MAX_CONSUME_TIMEOUT", "60s", "longest wait (`duration`) a consume may ask for",
			dur(func(s *Settings) *time.Duration { return &s.MaxConsumeTimeout })},
		{"max_consume_bytes", "SLUICE_MAX_CONSUME_BYTES", "4194304", "most `bytes` of jobs one consume answers (fewer jobs when they are large; a larger job comes alone)",
			integer(func(s *Settings, n int64) { s.MaxConsumeBytes = n })},
		{"shutdown_timeout", "SLUICE_SHUTDOWN_TIMEOUT", "30s", "how long (`duration`) a graceful shutdown waits for in-flight requests",
			dur(func(s *Settings) *time.Duration { return &s.ShutdownTimeout })},
		{"token_cache_ttl", "SLUICE_TOKEN_CACHE_TTL", "500ms", "how long (`duration`) token lookups are cached (bounds how long a revoked token works; at most 1s)",
			dur(func(s *Settings) *time.Duration { return &s.TokenCacheTTL })},
		{"namespace_max_queues", "SLUICE_NAMESPACE_MAX_QUEUES", "0", "most `queues` a namespace may have unless its own quota says otherwise; 0: no quota",
			integer(func(s *Settings, n int64) { s.NamespaceQuotas.MaxQueues = n })},
		{"namespace_max_tokens", "SLUICE_NAMESPACE_MAX_TOKENS", "0", "most `tokens` a namespace may hold unless its own quota says otherwise; 0: no quota",
			integer(func(s *Settings, n int64) { s.NamespaceQuotas.MaxTokens = n })},
		{"namespace_max_schedules", "SLUICE_NAMESPACE_MAX_SCHEDULES", "0", "most `schedules` a namespace may hold unless its own quota says otherwise; 0: no quota",
			integer(func(s *Settings, n int64) { s.NamespaceQuotas.MaxSchedules = n })},
		{"namespace_max_stored_jobs", "SLUICE_NAMESPACE_MAX_STORED_JOBS", "0", "most `jobs` a namespace's queues may hold unless its own quota says otherwise; 0: no quota",
			integer(func(s *Settings, n int64) { s.NamespaceQuotas.MaxStoredJobs = n })},
		{"namespace_max_stored_bytes", "SLUICE_NAMESPACE_MAX_STORED_BYTES", "0", "most `bytes` of Redis memory a namespace's jobs may take unless its own quota says otherwise; 0: no quota",
			integer(func(s *Settings, n int64) { s.NamespaceQuotas.MaxStoredBytes = n })},
		{"metrics_max_queues", "SLUICE_METRICS_MAX_QUEUES", "1000", "most `queues` a /metrics scrape reports",
			integer(func(s *Settings, n int64) { s.MetricsMaxQueues = int(n) })},
		{"maintain_interval", "SLUICE_MAINTAIN_INTERVAL", "500ms", "how often (`duration`) due jobs are promoted and expired leases reaped",
			dur(func(s *Settings) *time.Duration { return &s.MaintainInterval })},
		{"room_pass_keys", "SLUICE_ROOM_PASS_KEYS", `""`, "comma-separated `keys` (32+ bytes each, the first signs) of the waiting rooms' cookies; empty: one kept in Redis",
			str(func(s *Settings) *string { return &s.RoomPassKeys })},
		{"room_pass_tokens", "SLUICE_ROOM_PASS_TOKENS", "false", "issue the waiting rooms' passes as Ed25519 JWTs the protected site can verify with /v1/rooms/jwks.json (`true|false`)",
			boolean(func(s *Settings) *bool { return &s.RoomPassTokens })},
		{"room_pass_token_keys", "SLUICE_ROOM_PASS_TOKEN_KEYS", `""`, "comma-separated Ed25519 `seeds` (32 bytes, base64url; the first signs, at most three) of token passes; empty: one kept in Redis",
			str(func(s *Settings) *string { return &s.RoomPassTokenKeys })},
		{"room_pass_bind", "SLUICE_ROOM_PASS_BIND", "false", "bind each token pass to its browser's visitor cookie, so a copied pass alone admits nobody (`true|false`)",
			boolean(func(s *Settings) *bool { return &s.RoomPassBind })},
		{"proxy_rooms", "SLUICE_PROXY_ROOMS", `""`, "`host=room,...` pairs the public listener serves through a waiting room's reverse proxy (*=room: every other request)",
			str(func(s *Settings) *string { return &s.ProxyRooms })},
		{"room_upstream_dial_timeout", "SLUICE_ROOM_UPSTREAM_DIAL_TIMEOUT", "30s", "longest wait (`duration`) of a room's reverse proxy to connect to the room's upstream",
			dur(func(s *Settings) *time.Duration { return &s.RoomUpstreamDialTimeout })},
		{"room_upstream_header_timeout", "SLUICE_ROOM_UPSTREAM_HEADER_TIMEOUT", "0s", "longest wait (`duration`) of a room's reverse proxy for the upstream's response header; 0: none (long polls)",
			dur(func(s *Settings) *time.Duration { return &s.RoomUpstreamHeaderTimeout })},
		{"room_arrivals_per_minute", "SLUICE_ROOM_ARRIVALS_PER_MINUTE", "60", "new `visitors` one client address (an IPv6 /64) may put in a room's line per minute, unless the room says otherwise; -1: no limit",
			integer(func(s *Settings, n int64) { s.RoomArrivalsPerMinute = int(n) })},
		{"callback_workers", "SLUICE_CALLBACK_WORKERS", "32", "how many `callbacks` this instance sends at once",
			integer(func(s *Settings, n int64) { s.CallbackWorkers = int(n) })},
		{"callback_allow_private", "SLUICE_CALLBACK_ALLOW_PRIVATE", "false", "let every namespace's callbacks reach loopback and private addresses (`true|false`)",
			boolean(func(s *Settings) *bool { return &s.CallbackAllowPrivate })},
		{"callback_max_result_bytes", "SLUICE_CALLBACK_MAX_RESULT_BYTES", "65536", "most `bytes` of a callback's response kept as the job's result",
			integer(func(s *Settings, n int64) { s.CallbackMaxResultBytes = n })},
		{"callback_destination_concurrency", "SLUICE_CALLBACK_DESTINATION_CONCURRENCY", "0", "most callbacks in flight to one destination across instances (`n`, 0: no cap)",
			integer(func(s *Settings, n int64) { s.CallbackDestinationConcurrency = int(n) })},
		{"callback_destination_rate", "SLUICE_CALLBACK_DESTINATION_RATE", "0", "most callbacks started per second to one destination across instances (`n`, 0: no cap)",
			integer(func(s *Settings, n int64) { s.CallbackDestinationRate = int(n) })},
		{"replica_acks", "SLUICE_REPLICA_ACKS", "0", "how many `replicas` must acknowledge a published job (Redis WAIT) before the publish answers; 0: none",
			integer(func(s *Settings, n int64) { s.ReplicaAcks = int(n) })},
		{"replica_ack_timeout", "SLUICE_REPLICA_ACK_TIMEOUT", "1s", "longest wait (`duration`) for replica_acks; fewer acknowledgements fail the publish with 503",
			dur(func(s *Settings) *time.Duration { return &s.ReplicaAckTimeout })},
		{"relay_workers", "SLUICE_RELAY_WORKERS", "64", "most offline calls (`n`) of the request queue this instance makes at once; -1: no dispatcher here",
			integer(func(s *Settings, n int64) { s.RelayWorkers = int(n) })},
		{"relay_allow_private", "SLUICE_RELAY_ALLOW_PRIVATE", "false", "let offline calls reach loopback and private addresses (`bool`)",
			boolean(func(s *Settings) *bool { return &s.RelayAllowPrivate })},
		{"relay_permit_keys", "SLUICE_RELAY_PERMIT_KEYS", `""`, "comma-separated `keys` (32+ bytes each) signing online permits, the first signs; empty: one generated and stored in Redis",
			keys(func(s *Settings) *[]string { return &s.RelayPermitKeys })},
		{"relay_grant_keys", "SLUICE_RELAY_GRANT_KEYS", `""`, "comma-separated `keys` (32+ bytes each) verifying priority grants; empty: grants ignored",
			keys(func(s *Settings) *[]string { return &s.RelayGrantKeys })},
		{"relay_default_max_priority", "SLUICE_RELAY_DEFAULT_MAX_PRIORITY", "0", "priority cap (`0..255`) of tasks submitted with a token that has no max_priority",
			integer(func(s *Settings, n int64) { s.RelayDefaultMaxPriority = int(n) })},
		{"relay_endpoints", "SLUICE_RELAY_ENDPOINTS", "{}", "`JSON` object of endpoint name -> settings (as PUT /v1/endpoints/{name}), applied at start",
			func(s *Settings, v string) error {
				m, err := parseEndpoints(v)
				s.RelayEndpoints = m
				return err
			}},
		{"relay_pending_retention", "SLUICE_RELAY_PENDING_RETENTION", "3h", "longest (`duration`) a task waits for its turn in Redis",
			dur(func(s *Settings) *time.Duration { return &s.RelayPendingRetention })},
		{"relay_finished_retention", "SLUICE_RELAY_FINISHED_RETENTION", "1h", "how long (`duration`) a finished task stays in Redis",
			dur(func(s *Settings) *time.Duration { return &s.RelayFinishedRetention })},
		{"relay_read_retention", "SLUICE_RELAY_READ_RETENTION", "20s", "how long (`duration`) a finished task stays in Redis after its final status was read",
			dur(func(s *Settings) *time.Duration { return &s.RelayReadRetention })},
		{"relay_idempotency_retention", "SLUICE_RELAY_IDEMPOTENCY_RETENTION", "24h", "how long (`duration`) an Idempotency-Key of a task submit answers with the task it first created",
			dur(func(s *Settings) *time.Duration { return &s.RelayIdempotencyRetention })},
		{"archive_dsn", "SLUICE_ARCHIVE_DSN", `""`, "MySQL/MariaDB `DSN` (user:pass@tcp(host:3306)/db) finished tasks are archived to",
			str(func(s *Settings) *string { return &s.ArchiveDSN })},
		{"archive_retention", "SLUICE_ARCHIVE_RETENTION", "72h", "how long (`duration`) archived tasks are kept",
			dur(func(s *Settings) *time.Duration { return &s.ArchiveRetention })},
		{"tracing_endpoint", "SLUICE_TRACING_ENDPOINT", `""`, "OTLP collector (`host:port` or URL; http:// sends without TLS) the server's OpenTelemetry traces go to; empty: OTEL_EXPORTER_OTLP_ENDPOINT, else no tracing",
			str(func(s *Settings) *string { return &s.Tracing.Endpoint })},
		{"tracing_protocol", "SLUICE_TRACING_PROTOCOL", `""`, "OTLP `protocol`: grpc or http/protobuf; empty: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf",
			str(func(s *Settings) *string { return &s.Tracing.Protocol })},
		{"tracing_sample_ratio", "SLUICE_TRACING_SAMPLE_RATIO", "0", "share (`0..1`) of new traces sampled (a request's traceparent decides for its own); 0: OTEL_TRACES_SAMPLER, else all",
			func(s *Settings, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return fmt.Errorf("%q is not a number", v)
				}
				s.Tracing.SampleRatio = f
				return nil
			}},
		{"tracing_service_name", "SLUICE_TRACING_SERVICE_NAME", `""`, "service.name of the spans (`name`); empty: OTEL_SERVICE_NAME, else sluice",
			str(func(s *Settings) *string { return &s.Tracing.ServiceName })},
		{"log_format", "SLUICE_LOG_FORMAT", "text", "log `format`: text or json",
			str(func(s *Settings) *string { return &s.LogFormat })},
		{"log_level", "SLUICE_LOG_LEVEL", "info", "log `level`: debug, info, warn or error",
			str(func(s *Settings) *string { return &s.LogLevel })},
	}
}

// parseDuration takes a Go duration ("1.5s", "2m") or a bare number of seconds ("1.5").
func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 || f > httpapi.MaxSeconds {
			return 0, fmt.Errorf("%q is out of range", v)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (30s, 500ms) or a number of seconds", v)
	}
	return d, nil
}

// SettingsSources are where LoadSettings reads; later sources win: the config file, then the
// environment, then the flags.
type SettingsSources struct {
	// File is the path of a JSON config file ("" for none).
	File string
	// Getenv reads the environment (nil: none).
	Getenv func(string) string
	// Flags are the options given on the command line, by key.
	Flags map[string]string
}

// LoadSettings reads the settings from the sources (defaults apply to whatever none sets).
func LoadSettings(src SettingsSources) (Settings, error) {
	var s Settings
	opts := Options()
	if src.File != "" {
		if err := loadConfigFile(src.File, &s, opts); err != nil {
			return s, err
		}
	}
	if src.Getenv != nil {
		for _, o := range opts {
			if v := src.Getenv(o.Env); v != "" {
				if err := o.Set(&s, v); err != nil {
					return s, fmt.Errorf("environment %s: %w", o.Env, err)
				}
			}
		}
	}
	for _, o := range opts {
		if v, ok := src.Flags[o.Key]; ok {
			if err := o.Set(&s, v); err != nil {
				return s, fmt.Errorf("flag --%s: %w", o.Flag(), err)
			}
		}
	}
	if _, err := s.NewLogger(io.Discard); err != nil {
		return s, err
	}
	return s, nil
}

// loadConfigFile reads a JSON object whose keys are option keys; values are strings, numbers
// (durations in seconds) or booleans. Unknown keys are errors.
func loadConfigFile(path string, s *Settings, opts []Option) error {
	data, err := os.ReadFile(path) //nolint:gosec // the operator names the config file
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("config file %s: not a JSON object: %w", path, err)
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if k == roomsKey {
			if err := loadRooms(raw[k], s); err != nil {
				return fmt.Errorf("config file %s: %w", path, err)
			}
			continue
		}
		i := slices.IndexFunc(opts, func(o Option) bool { return o.Key == k })
		if i < 0 {
			return fmt.Errorf("config file %s: unknown key %q", path, k)
		}
		var v any
		if err := json.Unmarshal(raw[k], &v); err != nil {
			return fmt.Errorf("config file %s: %s: %w", path, k, err)
		}
		var text string
		switch x := v.(type) {
		case string:
			text = x
		case float64:
			text = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			text = strconv.FormatBool(x)
		case map[string]any:
			if k != "relay_endpoints" {
				return fmt.Errorf("config file %s: %s: want a string or a number", path, k)
			}
			text = string(raw[k]) // an option whose value is JSON
		case []any:
			if !strings.HasSuffix(k, "_keys") {
				return fmt.Errorf("config file %s: %s: want a string or a number", path, k)
			}
			// A list of secrets (relay_permit_keys, relay_grant_keys).
			parts := make([]string, len(x))
			for i, e := range x {
				str, ok := e.(string)
				if !ok {
					return fmt.Errorf("config file %s: %s: want a list of strings", path, k)
				}
				parts[i] = str
			}
			text = strings.Join(parts, ",")
		default:
			return fmt.Errorf("config file %s: %s: want a string or a number", path, k)
		}
		if err := opts[i].Set(s, text); err != nil {
			return fmt.Errorf("config file %s: %w", path, err)
		}
	}
	return nil
}

// roomsKey is the config file's key of the waiting rooms to create at start: an object of room
// name to the settings PUT /v1/rooms/{room} takes. It has no flag or environment variable.
const roomsKey = "rooms"

func loadRooms(raw json.RawMessage, s *Settings) error {
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil {
		return fmt.Errorf("rooms: want an object of room name to settings: %w", err)
	}
	s.Rooms = make(map[string]rooms.RoomJSON, len(byName))
	for name, body := range byName {
		var room rooms.RoomJSON
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&room); err != nil {
			return fmt.Errorf("rooms: %s: %w", name, err)
		}
		if _, err := room.Config(); err != nil {
			return fmt.Errorf("rooms: %s: %w", name, err)
		}
		s.Rooms[name] = room
	}
	return nil
}

// NewLogger returns the logger the settings ask for, writing to w.
func (s Settings) NewLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch strings.ToLower(s.LogLevel) {
	case "", "info":
		level = slog.LevelInfo
	case "debug":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("log_level: %q is not debug, info, warn or error", s.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(s.LogFormat) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, errors.New("log_format: want text or json, got " + strconv.Quote(s.LogFormat))
	}
}
