package outbound

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is the wait before retry number attempt (1 for the first retry) of a failed call:
// base·2^(attempt-1) capped at maxDelay, less a random 0-20% so that calls that failed together do
// not retry together. base <= 0 means 1s; maxDelay <= 0 means 10m.
func Backoff(attempt int, base, maxDelay time.Duration) time.Duration {
	return JitteredBackoff(attempt, base, maxDelay, 0.2)
}

// JitteredBackoff is Backoff less a random 0 to jitter of the delay instead of 0-20% (jitter is
// clamped to 0..1; 0 means none). It is also the curve of queue.ExponentialBackoff, which lives
// here because the queue package imports this one for callbacks.
func JitteredBackoff(attempt int, base, maxDelay time.Duration, jitter float64) time.Duration {
	if base <= 0 {
		base = time.Second
	}
	if maxDelay <= 0 {
		maxDelay = 10 * time.Minute
	}
	attempt = max(attempt, 1)
	d := maxDelay
	if attempt <= 62 {
		if f := float64(base) * math.Pow(2, float64(attempt-1)); f < float64(maxDelay) {
			d = time.Duration(f)
		}
	}
	if j := min(max(jitter, 0), 1); j > 0 {
		d -= time.Duration(rand.Float64() * j * float64(d))
	}
	return d
}
