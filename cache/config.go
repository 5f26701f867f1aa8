package cache

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Mode is the consistency a Store gives readers right after a Delete.
type Mode int

const (
	// Eventual (the default): right after a Delete a reader may still get the old value while one
	// refresher reloads it; no value read before the Delete is ever written back, and once writes
	// stop every key converges to the database.
	Eventual Mode = iota
	// Strong: once Delete returns, no Get that starts later returns a value older than the Delete.
	// Readers of a deleted key wait for the reload.
	Strong
)

// String returns "eventual" or "strong".
func (m Mode) String() string {
	switch m {
	case Eventual:
		return "eventual"
	case Strong:
		return "strong"
	default:
		return fmt.Sprintf("Mode(%d)", int(m))
	}
}

// ErrorPolicy says what Get does when Redis fails.
type ErrorPolicy int

const (
	// FailOnError (the default) returns the Redis error to the caller.
	FailOnError ErrorPolicy = iota
	// LoadOnError calls the loader directly, under an in-process guard (one load per key at a time
	// and at most Config.DegradedConcurrency loads at once), and writes nothing to Redis.
	LoadOnError
)

// Config configures a Store. The zero value is usable: every field's comment states its default.
type Config struct {
	// Prefix starts every Redis key and channel the Store uses. Default "sluice".
	Prefix string
	// TTL is how long a loaded value stays cached (before jitter). Any positive duration works,
	// down to a millisecond. Default 10m.
	TTL time.Duration
	// EmptyTTL is how long a "not found" marker stays cached after a loader returned ErrNotFound.
	// Default 1m.
	EmptyTTL time.Duration
	// Jitter spreads expiries to avoid avalanches: each TTL is multiplied by a random factor in
	// [1-Jitter, 1+Jitter]. Default 0.1 (±10%); a negative value disables jitter. Must be < 1.
	Jitter float64
	// RefreshAhead, when positive, makes a Get that finds a value within RefreshAhead of its expiry
	// start one background reload while it returns the current value. Default 0 (off). Must be
	// less than TTL.
	RefreshAhead time.Duration
	// Mode is the consistency after a Delete. Default Eventual.
	Mode Mode
	// LockTTL is how long a loader holds a key's lock before another process may take over.
	// Default 5s.
	LockTTL time.Duration
	// LoadTimeout bounds one call of a loader (its context is cancelled after it). Default LockTTL.
	LoadTimeout time.Duration
	// WaitTimeout bounds how long a Get waits for another process's load before it returns
	// ErrWaitTimeout. Default 2×LockTTL.
	WaitTimeout time.Duration
	// OnRedisError says what Get does when Redis fails. Default FailOnError.
	OnRedisError ErrorPolicy
	// DegradedConcurrency bounds the loader calls made at once while Redis is bypassed (switched
	// off with BypassReads or failing under LoadOnError). Default 8.
	DegradedConcurrency int
	// BypassReads starts the Store with cache reads switched off: Get and GetMany call the loader
	// under the degraded guard. Switch at run time with Store.BypassReads. Default false.
	BypassReads bool
	// BypassDeletes starts the Store with deletes switched off (Delete does nothing). Switch at run
	// time with Store.BypassDeletes. Default false.
	BypassDeletes bool
	// Codec turns values into bytes and back. Default JSON.
	Codec Codec
	// Logger receives warnings (loader panics, Redis errors). Default slog.Default().
	Logger *slog.Logger
	// Hooks are called on events, for metrics. Default none.
	Hooks Hooks
}

// Hooks are optional callbacks, called synchronously; keep them fast. The key is the cache key as a
// string.
type Hooks struct {
	// OnLoad is called after every loader call with its duration and result error.
	OnLoad func(key string, d time.Duration, err error)
	// OnStaleWriteRejected is called when a load's write-back was refused because the key was
	// deleted (or its lock taken over) after the load began.
	OnStaleWriteRejected func(key string)
	// OnRedisError is called when a Redis command fails.
	OnRedisError func(err error)
}

// withDefaults returns a copy of c with the defaults filled in.
func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sluice")
	c.TTL = cmp.Or(c.TTL, 10*time.Minute)
	c.EmptyTTL = cmp.Or(c.EmptyTTL, time.Minute)
	c.Jitter = cmp.Or(c.Jitter, 0.1)
	if c.Jitter < 0 {
		c.Jitter = 0
	}
	c.LockTTL = cmp.Or(c.LockTTL, 5*time.Second)
	c.LoadTimeout = cmp.Or(c.LoadTimeout, c.LockTTL)
	c.WaitTimeout = cmp.Or(c.WaitTimeout, 2*c.LockTTL)
	c.DegradedConcurrency = cmp.Or(c.DegradedConcurrency, 8)
	if c.Codec == nil {
		c.Codec = JSON{}
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case c.TTL < time.Millisecond:
		return errors.New("cache: Config.TTL must be at least 1ms")
	case c.EmptyTTL < time.Millisecond:
		return errors.New("cache: Config.EmptyTTL must be at least 1ms")
	case c.Jitter >= 1:
		return errors.New("cache: Config.Jitter must be less than 1")
	case c.RefreshAhead < 0 || c.RefreshAhead >= c.TTL:
		return errors.New("cache: Config.RefreshAhead must be in [0, TTL)")
	case c.Mode != Eventual && c.Mode != Strong:
		return fmt.Errorf("cache: Config.Mode %d is unknown", int(c.Mode))
	case c.LockTTL < time.Millisecond:
		return errors.New("cache: Config.LockTTL must be at least 1ms")
	case c.LoadTimeout <= 0:
		return errors.New("cache: Config.LoadTimeout must be positive")
	case c.WaitTimeout <= 0:
		return errors.New("cache: Config.WaitTimeout must be positive")
	case c.OnRedisError != FailOnError && c.OnRedisError != LoadOnError:
		return fmt.Errorf("cache: Config.OnRedisError %d is unknown", int(c.OnRedisError))
	case c.DegradedConcurrency < 1:
		return errors.New("cache: Config.DegradedConcurrency must be at least 1")
	}
	return nil
}
