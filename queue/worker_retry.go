package queue

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

// RetryPolicy chooses how long a failed job waits before its next try. The worker asks it after
// every failed delivery that has tries left and passes the answer to Nack as RetryAfter, so the
// delay is computed in Go and Redis only schedules it.
type RetryPolicy interface {
	// RetryDelay is the wait before the next try. attempt is the delivery that failed (1 for the
	// first); err is what the handler returned.
	RetryDelay(attempt int, err error) time.Duration
}

// RetryPolicyFunc adapts a function to RetryPolicy.
type RetryPolicyFunc func(attempt int, err error) time.Duration

// RetryDelay calls f.
func (f RetryPolicyFunc) RetryDelay(attempt int, err error) time.Duration { return f(attempt, err) }

// ExponentialBackoff waits Base, 2·Base, 4·Base, ... capped at Max, each delay shortened by a
// random fraction of up to Jitter so that jobs that failed together do not retry together.
type ExponentialBackoff struct {
	// Base is the delay after the first failed try. Default 1s.
	Base time.Duration
	// Max caps the delay. Default 10m.
	Max time.Duration
	// Jitter is the largest fraction (0..1) taken off each delay at random; 0 means none.
	Jitter float64
}

// DefaultRetryPolicy is the worker's retry policy when ConsumeConfig.RetryPolicy is nil: 1s, 2s,
// 4s, ... capped at 10 minutes, each up to 20% shorter at random.
var DefaultRetryPolicy RetryPolicy = ExponentialBackoff{Base: time.Second, Max: 10 * time.Minute, Jitter: 0.2}

var _ RetryPolicy = ExponentialBackoff{}

// RetryDelay returns Base·2^(attempt-1), capped at Max, less up to Jitter of it.
func (b ExponentialBackoff) RetryDelay(attempt int, _ error) time.Duration {
	return outbound.JitteredBackoff(attempt, b.Base, b.Max, b.Jitter)
}

// NackParamsFor returns the Nack a worker sends when a handler failed delivery d with err: the
// error's text (bounded) as the job's last error; SkipRetry's error sends the job to the dead
// letter now, RetryAfter's names the delay, and any other error waits policy's delay while the
// job has tries left. Code that runs handlers itself (queuetest's Drain) settles failures as
// workers do with it.
func NackParamsFor(d *Delivery, err error, policy RetryPolicy) NackParams {
	text := err.Error()
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	p := NackParams{Namespace: d.Namespace, Queue: d.Queue, ID: d.ID, Delivery: d.Delivery, Error: text}
	var skip *skipRetryError
	var after *retryAfterError
	switch {
	case errors.As(err, &skip):
		p.NoRetry = true
	case errors.As(err, &after):
		p.RetryAfter = &after.after
	case d.RemainingTries > 0:
		if policy == nil {
			policy = DefaultRetryPolicy
		}
		delay := max(policy.RetryDelay(d.Delivery, err), 0)
		p.RetryAfter = &delay
	}
	return p
}

// SkipRetry marks a handler's error as final: the job goes to the dead letter at once, whatever
// tries it has left. err is kept as the job's last error.
func SkipRetry(err error) error {
	if err == nil {
		err = errors.New("skip retry")
	}
	return &skipRetryError{err: err}
}

type skipRetryError struct{ err error }

func (e *skipRetryError) Error() string { return e.err.Error() }
func (e *skipRetryError) Unwrap() error { return e.err }

// RetryAfter makes a handler's error choose the delay before the next try, instead of the retry
// policy. With no tries left the job goes to the dead letter all the same.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		err = fmt.Errorf("retry after %s", d)
	}
	return &retryAfterError{after: max(d, 0), err: err}
}

type retryAfterError struct {
	after time.Duration
	err   error
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// PanicError is the failure a handler's panic becomes. The worker logs it with Stack and retries
// the job like any other failure.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }
