package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Handler runs one delivery; a nil error acks it, an error fails it (see Consume). Middleware
// wraps Handlers; the innermost Handler of a Queue decodes the payload and calls the typed handler.
type Handler func(ctx context.Context, d *Delivery) error

// Middleware wraps a Handler, for logging, metrics or tracing. It sees every run of the handler
// with its delivery, the error the handler returned and the time it took.
type Middleware func(next Handler) Handler

// ConsumeConfig configures one Consume call. The zero value is usable: every field has a default.
type ConsumeConfig struct {
	// Concurrency is the most handlers running at once. Default 10.
	Concurrency int

	// Prefetch is how many jobs may wait leased in memory for a free handler, on top of the running
	// ones, to hide the fetch round trip from handlers that take little time. Jobs that wait are
	// kept leased and handed back at shutdown. Default 0: fetch only for free handlers.
	Prefetch int

	// TTR is the lease length. The worker extends the lease while the handler runs, each time a
	// third of it has passed, so it bounds how soon a job held by a crashed worker runs elsewhere,
	// not how long a handler may take. Default 0: each job's own TTR (QueueConfig.TTR, or WithTTR).
	TTR time.Duration

	// Timeout bounds one run of the handler: its context is cancelled after it, and the run counts
	// as failed unless the handler returns nil. Default 0: no limit.
	Timeout time.Duration

	// DrainTimeout is how long running handlers may go on after ctx ends, with their own contexts
	// still live. After it their contexts are cancelled and their jobs handed back (their results
	// are dropped). Default 10s.
	DrainTimeout time.Duration

	// RetryPolicy chooses the delay before a failed job's next try. Default DefaultRetryPolicy.
	RetryPolicy RetryPolicy

	// Middleware wraps the handler; the first one is the outermost. Default none.
	Middleware []Middleware

	// AckBatch is the most acks sent in one AckMany call. Default 500.
	AckBatch int

	// AckInterval is the longest a finished job's ack waits to be sent with others. Default 2ms.
	AckInterval time.Duration

	// Logger receives the workers' logs. Default QueueConfig.Logger.
	Logger *slog.Logger
}

func (c ConsumeConfig) withDefaults(qc QueueConfig) ConsumeConfig {
	c.Concurrency = cmp.Or(c.Concurrency, 10)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, 10*time.Second)
	c.AckBatch = cmp.Or(c.AckBatch, 500)
	c.AckInterval = cmp.Or(c.AckInterval, 2*time.Millisecond)
	if c.RetryPolicy == nil {
		c.RetryPolicy = DefaultRetryPolicy
	}
	if c.Logger == nil {
		c.Logger = qc.Logger
	}
	return c
}

func (c ConsumeConfig) validate() error {
	var errs []error
	if c.Concurrency < 1 || c.Concurrency > MaxConsumeCount {
		errs = append(errs, fmt.Errorf("consume config: Concurrency %d is outside 1..%d", c.Concurrency, MaxConsumeCount))
	}
	if c.Prefetch < 0 || c.Prefetch > MaxConsumeCount {
		errs = append(errs, fmt.Errorf("consume config: Prefetch %d is outside 0..%d", c.Prefetch, MaxConsumeCount))
	}
	if c.TTR < 0 || (c.TTR > 0 && c.TTR < time.Millisecond) {
		errs = append(errs, errors.New("consume config: TTR must be 0 or at least 1ms"))
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("consume config: Timeout must not be negative"))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, errors.New("consume config: DrainTimeout must not be negative"))
	}
	if c.AckBatch < 1 || c.AckBatch > 10_000 {
		errs = append(errs, fmt.Errorf("consume config: AckBatch %d is outside 1..10000", c.AckBatch))
	}
	if c.AckInterval < 0 {
		errs = append(errs, errors.New("consume config: AckInterval must not be negative"))
	}
	for i, m := range c.Middleware {
		if m == nil {
			errs = append(errs, fmt.Errorf("consume config: Middleware[%d] is nil", i))
		}
	}
	return errors.Join(errs...)
}
