package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Algorithm is the way a Limiter counts. The zero value is GCRA.
type Algorithm int

const (
	// GCRA is the generic cell rate algorithm: a token bucket that refills Limit.Rate tokens per
	// Limit.Period and holds at most Limit.Burst. It stores one timestamp per key and spreads
	// events evenly. The default.
	GCRA Algorithm = iota
	// SlidingLog keeps one entry per event of the last period and is exact: never more than
	// Limit.Rate events in any period-long stretch of time. Memory grows with the limit (at most
	// Limit.Rate entries per key).
	SlidingLog
	// SlidingWindow estimates the count of the last period from two clock-aligned fixed windows
	// (the previous one weighted by how much of it the sliding window still covers). Constant
	// memory per key; never more than Limit.Rate events in one aligned window and close to the
	// limit for steady traffic, but a burst at a window edge can let up to twice the limit
	// through in one period-long stretch.
	SlidingWindow
	// FixedWindow counts events in consecutive windows of Limit.Period (aligned to the clock when
	// Config.AlignWindows is set). Cheapest; up to twice the limit can pass in a period-long
	// stretch that straddles two windows.
	FixedWindow
)

// String returns the algorithm's name as used in key names: "gcra", "sliding_log",
// "sliding_window" or "fixed_window".
func (a Algorithm) String() string {
	switch a {
	case GCRA:
		return "gcra"
	case SlidingLog:
		return "sliding_log"
	case SlidingWindow:
		return "sliding_window"
	case FixedWindow:
		return "fixed_window"
	default:
		return fmt.Sprintf("Algorithm(%d)", int(a))
	}
}

// Limit is a rate: Rate events per Period, and for GCRA up to Burst at once.
type Limit struct {
	// Rate is how many events a key may have per Period. Required, at least 1.
	Rate int
	// Period is the length of the window (or the refill period of GCRA). Required, at least one
	// microsecond; the granularity is one microsecond.
	Period time.Duration
	// Burst is, for GCRA, how many events may happen at once after a quiet spell. Default Rate.
	// The other algorithms allow Rate at once and ignore Burst.
	Burst int
}

// PerSecond is a limit of rate events per second with a burst of rate.
func PerSecond(rate int) Limit { return Limit{Rate: rate, Period: time.Second, Burst: rate} }

// PerMinute is a limit of rate events per minute with a burst of rate.
func PerMinute(rate int) Limit { return Limit{Rate: rate, Period: time.Minute, Burst: rate} }

// PerHour is a limit of rate events per hour with a burst of rate.
func PerHour(rate int) Limit { return Limit{Rate: rate, Period: time.Hour, Burst: rate} }

// String formats the limit as "10/1s burst 20".
func (l Limit) String() string { return fmt.Sprintf("%d/%s burst %d", l.Rate, l.Period, l.Burst) }

// maxExact is 2^53: the scripts keep every value an exact integer in a Lua number (a double).
const maxExact = 1 << 53

// FailurePolicy says what a Limiter decides when Redis cannot be reached.
type FailurePolicy int

const (
	// FailLocal decides with an in-process GCRA limiter at the same limit (per process, so a fleet
	// of n processes lets up to n times the limit through while Redis is down). The default.
	FailLocal FailurePolicy = iota
	// FailOpen allows every event while Redis is down.
	FailOpen
	// FailClosed denies every event while Redis is down.
	FailClosed
)

// String returns "local", "open" or "closed".
func (p FailurePolicy) String() string {
	switch p {
	case FailLocal:
		return "local"
	case FailOpen:
		return "open"
	case FailClosed:
		return "closed"
	default:
		return fmt.Sprintf("FailurePolicy(%d)", int(p))
	}
}

// Config configures a Limiter.
type Config struct {
	// Limit is the rate every key gets. Required.
	Limit Limit
	// Algorithm is how events are counted. Default GCRA.
	Algorithm Algorithm
	// AlignWindows, for FixedWindow, starts windows at multiples of Limit.Period since the Unix
	// epoch (so all keys roll over together, like a calendar minute). Default false: a key's window
	// starts with its first event. SlidingWindow is always aligned; the others ignore it.
	AlignWindows bool
	// Prefix starts every key the limiter writes. Default "sluice". Must not contain '{' or '}'.
	Prefix string
	// Name tells limiters apart that share a prefix and key space (for example "read" and
	// "write"). Default the algorithm's name. Must not contain '{' or '}'.
	Name string
	// FailurePolicy says what to decide while Redis is unreachable. Default FailLocal.
	FailurePolicy FailurePolicy
	// RetryRedisAfter is how long the limiter decides by its failure policy, without trying Redis,
	// after a Redis error; then the next call tries Redis again. Default 1s.
	RetryRedisAfter time.Duration
	// LocalMaxKeys bounds the keys the FailLocal limiter tracks; past it, keys whose bucket is full
	// again are dropped, then the oldest. Default 100000.
	LocalMaxKeys int
	// Logger receives a warning when the limiter falls back and a note when Redis is back.
	// Default slog.Default().
	Logger *slog.Logger
}

// withDefaults returns a copy of cfg with the defaults filled in.
func (cfg Config) withDefaults() Config {
	cfg.Prefix = cmp.Or(cfg.Prefix, "sluice")
	cfg.Name = cmp.Or(cfg.Name, cfg.Algorithm.String())
	cfg.Limit.Burst = cmp.Or(cfg.Limit.Burst, cfg.Limit.Rate)
	if cfg.Algorithm != GCRA {
		cfg.Limit.Burst = cfg.Limit.Rate
	}
	cfg.RetryRedisAfter = cmp.Or(cfg.RetryRedisAfter, time.Second)
	cfg.LocalMaxKeys = cmp.Or(cfg.LocalMaxKeys, 100_000)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return cfg
}

func (cfg Config) validate() error {
	l := cfg.Limit
	switch {
	case cfg.Algorithm < GCRA || cfg.Algorithm > FixedWindow:
		return fmt.Errorf("ratelimit: Config.Algorithm: unknown %v", cfg.Algorithm)
	case l.Rate < 1:
		return fmt.Errorf("ratelimit: Config.Limit.Rate must be at least 1, got %d", l.Rate)
	case l.Period < time.Microsecond:
		return fmt.Errorf("ratelimit: Config.Limit.Period must be at least 1µs, got %s", l.Period)
	case l.Burst < 1:
		return fmt.Errorf("ratelimit: Config.Limit.Burst must be at least 1, got %d", l.Burst)
	case float64(max(l.Burst, l.Rate))*float64(l.Period.Microseconds()) > maxExact:
		return fmt.Errorf("ratelimit: Config.Limit: max(Rate, Burst) × Period in µs must stay below 2^53, got %s", l)
	case cfg.FailurePolicy < FailLocal || cfg.FailurePolicy > FailClosed:
		return fmt.Errorf("ratelimit: Config.FailurePolicy: unknown %v", cfg.FailurePolicy)
	case cfg.RetryRedisAfter < 0:
		return fmt.Errorf("ratelimit: Config.RetryRedisAfter must not be negative, got %s", cfg.RetryRedisAfter)
	case cfg.LocalMaxKeys < 0:
		return fmt.Errorf("ratelimit: Config.LocalMaxKeys must not be negative, got %d", cfg.LocalMaxKeys)
	}
	if err := validName("Prefix", cfg.Prefix); err != nil {
		return err
	}
	return validName("Name", cfg.Name)
}

func validName(field, s string) error {
	if strings.ContainsAny(s, "{}") {
		return fmt.Errorf("ratelimit: Config.%s must not contain '{' or '}', got %q", field, s)
	}
	return nil
}

// ErrInvalidCost is returned (wrapped) for a cost below 1 or above what the limit can ever allow
// at once (Burst for GCRA, Rate for the others): such a request would otherwise wait forever.
var ErrInvalidCost = errors.New("ratelimit: invalid cost")
