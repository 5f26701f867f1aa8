package ratelimit

// Test-only hooks: this file is compiled only into the package's tests, so the public API has no
// way to set the scripts' clock.

// SetNow makes l's scripts use now() (µs since the Unix epoch) instead of Redis TIME.
func SetNow(l *Limiter, now func() int64) { l.now = now }

// SetConcurrencyNow makes c's scripts use now() (µs since the Unix epoch) instead of Redis TIME.
func SetConcurrencyNow(c *Concurrency, now func() int64) { c.now = now }

// Keys exposes the key layout so tests can read raw state.
var (
	LimiterKey   = limiterKey
	SemaphoreKey = semaphoreKey
)
