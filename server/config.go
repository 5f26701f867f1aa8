package server

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/internal/tenant"
	"io"
	"log/slog"
	"net"
	"os"
	"time"
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

	// AdminToken is the bearer token admin requests must carry. Default "": admin requests need no
	// token, which is only allowed while AdminAddr is a loopback address.
	AdminToken string

	// DataDir is where the managed redis-server keeps its append-only files in embedded mode.
	// Default "./sluice-data".
	DataDir string

	// RedisServerPath is the redis-server binary started in embedded mode; a bare name is looked
	// up in PATH. Default "redis-server".
	RedisServerPath string

	// MaxBodyBytes bounds a request body (and so a job's payload). Default 1 MiB.
	MaxBodyBytes int64

	// MaxConsumeTimeout bounds the "timeout" of a blocking consume. Default 60s.
	MaxConsumeTimeout time.Duration

	// ShutdownTimeout bounds how long a graceful shutdown waits for in-flight requests before it
	// closes their connections. Default 30s.
	ShutdownTimeout time.Duration

	// TokenCacheTTL is how long a token lookup (and a token's rate limit) is cached in-process,
	// which bounds how long a revoked token keeps working, and a changed limit takes to apply, on
	// other instances. Default 500ms; at most 1s.
	TokenCacheTTL time.Duration

	// MetricsMaxQueues bounds the queues whose depths and counters a /metrics scrape reports (the
	// first ones in namespace and name order). Default 1000.
	MetricsMaxQueues int

	// MaintainInterval is how often the server's maintainer promotes due jobs and reaps expired
	// leases of queues no consumer is reading. Default 500ms.
	MaintainInterval time.Duration

	// Logger receives the server's logs. Default: a text logger on stderr at level info.
	Logger *slog.Logger

	// Out receives the human-readable text of embedded mode (the first-start token and curl lines).
	// Default os.Stderr.
	Out io.Writer
}

// withDefaults returns a copy of c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sluice")
	c.PublicAddr = cmp.Or(c.PublicAddr, ":7777")
	c.AdminAddr = cmp.Or(c.AdminAddr, "127.0.0.1:7778")
	c.DataDir = cmp.Or(c.DataDir, "./sluice-data")
	c.RedisServerPath = cmp.Or(c.RedisServerPath, "redis-server")
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, 1<<20)
	c.MaxConsumeTimeout = cmp.Or(c.MaxConsumeTimeout, 60*time.Second)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, 30*time.Second)
	c.TokenCacheTTL = cmp.Or(c.TokenCacheTTL, 500*time.Millisecond)
	c.MetricsMaxQueues = cmp.Or(c.MetricsMaxQueues, 1000)
	c.MaintainInterval = cmp.Or(c.MaintainInterval, 500*time.Millisecond)
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
	if !tenant.ValidName(c.Prefix) {
		errs = append(errs, fmt.Errorf("config: prefix %q %s", c.Prefix, tenant.NameRule))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, errors.New("config: max_body_bytes must be at least 1024"))
	}
	if c.MaxConsumeTimeout < time.Millisecond {
		errs = append(errs, errors.New("config: max_consume_timeout must be at least 1ms"))
	}
	if c.ShutdownTimeout < time.Millisecond {
		errs = append(errs, errors.New("config: shutdown_timeout must be at least 1ms"))
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
	if _, _, err := net.SplitHostPort(c.PublicAddr); err != nil {
		errs = append(errs, fmt.Errorf("config: public_addr %q: %w", c.PublicAddr, err))
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
