package outbound

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is the wait before retry number attempt (1 for the first retry) of a failed call:
// base·2^(attempt-1) capped at maxDelay, less a random 0-20% so that calls that failed together do
// not retry together. It is the curve of queue.ExponentialBackoff, kept here so that the queue
// package can use this package for callbacks without an import cycle. base <= 0 means 1s;
// maxDelay <= 0 means 10m.
func Backoff(attempt int, base, maxDelay time.Duration) time.Duration {
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
	return d - time.Duration(rand.Float64()*0.2*float64(d))
}
