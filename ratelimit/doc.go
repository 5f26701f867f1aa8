// Package ratelimit limits how often and how many at once, across processes, with Redis as the
// shared state: rate limiters (GCRA/token bucket, sliding log, sliding window, fixed window), a
// distributed concurrency limiter (a leased semaphore), and net/http middleware.
//
// # Rate limits
//
// A Limiter applies one Limit to every key (a user, a token, an IP, a route):
//
//	limiter, err := ratelimit.New(client, ratelimit.Config{Limit: ratelimit.PerSecond(10)})
//	res, err := limiter.Allow(ctx, "user:42")
//	if !res.Allowed {
//		// wait res.RetryAfter
//	}
//
// Each decision is one Lua script on one Redis key (one round trip; the key is its own hash tag,
// so it works on Redis Cluster), timed by Redis TIME in integer microseconds, so clients with
// skewed clocks agree. A denial is a Result with Allowed false, not an error. AllowN takes a
// cost; a cost the limit could never allow is ErrInvalidCost. Wait blocks until allowed, Refund
// gives events back (for requests that failed), Reset forgets a key. Every key has a TTL, so
// idle keys go away by themselves.
//
// The algorithms trade exactness for memory:
//
//   - GCRA (the default): a token bucket of Burst refilled at Rate per Period, one timestamp per
//     key. Exact: never more than Burst + Rate×t/Period events in any stretch of time t.
//   - SlidingLog: one entry per event of the last Period; exact: never more than Rate in any
//     Period-long stretch. Memory up to Rate entries per key.
//   - SlidingWindow: two clock-aligned counters, the previous one weighted; constant memory. At
//     most Rate per aligned window, close to Rate per sliding Period for steady traffic, up to
//     2×Rate in a sliding Period for bursts placed at a window edge.
//   - FixedWindow: one counter per window (aligned to the clock or starting at a key's first
//     event). At most Rate per window, up to 2×Rate across a window edge.
//
// When Redis fails, Config.FailurePolicy decides: FailLocal (an in-process GCRA at the same
// limit, the default), FailOpen or FailClosed; the limiter tries Redis again after
// Config.RetryRedisAfter and Stats counts what happened.
//
// # Concurrency
//
// Concurrency is a leased semaphore: Acquire takes one of limit slots for a lease time, Release
// gives it back (and wakes waiters in AcquireWait through sharded pub/sub), Extend renews it; a
// holder that dies without releasing loses its slot when the lease ends.
//
// # HTTP
//
// Limiter.Middleware limits the requests reaching a handler by a KeyFunc (KeyByIP, KeyByHeader,
// KeyByToken, KeyByRoute, Keys), answers 429 with Retry-After, sets RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset, and has a shadow mode that counts without blocking.
//
// Key layout, bounds and benchmark figures are in docs/ratelimit.md.
package ratelimit

import "fmt"

// Compile-time interface guards.
var (
	_ fmt.Stringer = Algorithm(0)
	_ fmt.Stringer = FailurePolicy(0)
	_ fmt.Stringer = Limit{}
)
