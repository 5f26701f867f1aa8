package outbound

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Outcome is what a caller does after a call.
type Outcome int

const (
	// Success: a 2xx; the call is done.
	Success Outcome = iota + 1
	// Retry: a connection error, a timeout, a 5xx or a 429; try again later.
	Retry
	// Final: any other status (4xx, 3xx, 1xx), a refused destination or an invalid request; trying
	// again cannot help.
	Final
)

// String returns "success", "retry" or "final".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Retry:
		return "retry"
	case Final:
		return "final"
	default:
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
}

// MaxRetryAfter caps the wait a destination can ask for with Retry-After, so that a bad header
// cannot park a call for days.
const MaxRetryAfter = 10 * time.Minute

// Classify says what to do after Sender.Do returned resp and err. With Retry, the duration is the
// wait the destination asked for in Retry-After (delay-seconds or an HTTP-date, capped at
// MaxRetryAfter), or 0 when it asked for none and the caller's own backoff applies.
func Classify(resp Response, err error) (Outcome, time.Duration) {
	if err != nil {
		switch {
		case errors.Is(err, ErrDestinationRefused), errors.Is(err, ErrInvalidRequest):
			return Final, 0
		case resp.Status >= 200 && resp.Status < 300:
			// The status arrived but the body broke off: the destination did the work, and
			// repeating a call that succeeded is worse than keeping a partial body.
			return Success, 0
		default:
			// Connection errors, timeouts, a cancelled context (shutdown): the call may not have
			// happened, so it is tried again.
			return Retry, 0
		}
	}
	switch s := resp.Status; {
	case s >= 200 && s < 300:
		return Success, 0
	case s == http.StatusTooManyRequests || s >= 500:
		return Retry, RetryAfter(resp.Header, time.Now())
	default:
		return Final, 0
	}
}

// RetryAfter parses a Retry-After header (delay-seconds or HTTP-date, RFC 9110 §10.2.3) into a wait
// from now, capped at MaxRetryAfter; 0 when absent, malformed or in the past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}
