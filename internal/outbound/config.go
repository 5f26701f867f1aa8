package outbound

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"
)

// Config configures a Sender. The zero value is usable: every field's comment states its default.
type Config struct {
	// AllowPrivate lets calls reach loopback, private, link-local, unspecified, multicast and other
	// special-purpose addresses (and their IPv4-mapped forms). Default false: such destinations are
	// refused when dialled, with ErrDestinationRefused. Turn it on only when the endpoints are meant
	// to live on the same private network as Sluice.
	AllowPrivate bool
	// MaxResponseBytes bounds how much of a response body is read; the rest is dropped and the
	// Response marked Truncated. Default 1 MiB.
	MaxResponseBytes int64
	// Timeout bounds a whole call (dial, request, response body) when Request.Timeout is zero.
	// Default 30s.
	Timeout time.Duration
	// DialTimeout bounds connecting to the destination (within Timeout). Default 10s.
	DialTimeout time.Duration
	// UserAgent is sent when a request sets none. Default "sluice".
	UserAgent string
	// MaxIdleConnsPerHost is how many idle keep-alive connections are kept per destination. It is
	// high because a request queue sends many calls to few destinations. Default 256.
	MaxIdleConnsPerHost int
	// MaxConnsPerHost caps the connections (idle and busy) per destination; 0 means no cap.
	// Callers limit concurrency per endpoint themselves. Default 0.
	MaxConnsPerHost int
	// IdleConnTimeout closes a keep-alive connection left idle this long. Default 90s.
	IdleConnTimeout time.Duration
	// TLSConfig is used for https destinations (cloned). Default nil: system roots, Go defaults.
	TLSConfig *tls.Config
	// Logger receives a debug line for each refused destination. Default slog.Default().
	Logger *slog.Logger
}

// Defaults the Sender uses for unset Config fields.
const (
	DefaultMaxResponseBytes = 1 << 20
	DefaultTimeout          = 30 * time.Second
)

func (c Config) withDefaults() Config {
	c.MaxResponseBytes = cmp.Or(c.MaxResponseBytes, DefaultMaxResponseBytes)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.DialTimeout = cmp.Or(c.DialTimeout, 10*time.Second)
	c.UserAgent = cmp.Or(c.UserAgent, "sluice")
	c.MaxIdleConnsPerHost = cmp.Or(c.MaxIdleConnsPerHost, 256)
	c.IdleConnTimeout = cmp.Or(c.IdleConnTimeout, 90*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	for _, f := range []struct {
		name     string
		negative bool
	}{
		{"MaxResponseBytes", c.MaxResponseBytes < 0},
		{"Timeout", c.Timeout < 0},
		{"DialTimeout", c.DialTimeout < 0},
		{"MaxIdleConnsPerHost", c.MaxIdleConnsPerHost < 0},
		{"MaxConnsPerHost", c.MaxConnsPerHost < 0},
		{"IdleConnTimeout", c.IdleConnTimeout < 0},
	} {
		if f.negative {
			return fmt.Errorf("outbound: Config.%s must not be negative", f.name)
		}
	}
	return nil
}
