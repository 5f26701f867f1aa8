package queuetest

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// DrainOpts tune Drain. The zero value (or nil) is what a worker does.
type DrainOpts struct {
	// RetryPolicy is the delay before a failed job's next try, as ConsumeConfig.RetryPolicy.
	// Default queue.DefaultRetryPolicy: a failed job waits (delayed) and this Drain does not run it
	// again. A policy that answers 0 makes the job ready at once, so the Drain runs it again until
	// it succeeds or its tries run out.
	RetryPolicy queue.RetryPolicy
	// TTR is the lease of each delivery. Default: the job's own.
	TTR time.Duration
	// MaxRuns bounds the deliveries one Drain runs; past it the test fails (a handler that keeps
	// queueing ready jobs). Default 1000.
	MaxRuns int
}

// Outcome is what became of a delivery a Drain ran.
type Outcome string

// The outcomes of a delivery.
const (
	Acked   Outcome = "acked"   // the handler returned nil; the job is finished
	Retried Outcome = "retried" // the handler failed and the job has another try (see DrainOpts.RetryPolicy)
	Dead    Outcome = "dead"    // the handler failed with no tries left, or with queue.SkipRetry
	Expired Outcome = "expired" // the handler failed and the job's ttl ends before another try
)

// Run is one delivery a Drain ran.
type Run struct {
	Delivery queue.Delivery
	// Err is what the handler returned (a *queue.PanicError when it panicked); nil when it
	// succeeded.
	Err     error
	Outcome Outcome
}

// DrainResult is what a Drain did, in the order it ran the deliveries.
type DrainResult struct {
	Runs []Run
}

// Count returns how many runs had outcome o.
func (r DrainResult) Count(o Outcome) int {
	n := 0
	for _, run := range r.Runs {
		if run.Outcome == o {
			n++
		}
	}
	return n
}

// Errors returns the errors of the runs that failed, in order.
func (r DrainResult) Errors() []error {
	var errs []error
	for _, run := range r.Runs {
		if run.Err != nil {
			errs = append(errs, run.Err)
		}
	}
	return errs
}

// Drain runs the ready jobs of queue q of namespace ns through h, one at a time, in the test's
// goroutine, until none is ready, and returns what happened to each. It settles every delivery
// as a worker does: nil acks; an error nacks (the job's last error, queue.SkipRetry to the dead
// letter, queue.RetryAfter's delay, else DrainOpts.RetryPolicy's); a panic is a *queue.PanicError
// failure. The handler's context carries the delivery (queue.DeliveryFromContext). Delayed jobs
// that are not due stay where they are. A Redis failure fails the test.
func Drain(ctx context.Context, tb testing.TB, c *queue.Client, ns, q string, h queue.Handler, opts *DrainOpts) DrainResult {
	tb.Helper()
	var o DrainOpts
	if opts != nil {
		o = *opts
	}
	if o.RetryPolicy == nil {
		o.RetryPolicy = queue.DefaultRetryPolicy
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = 1000
	}
	var res DrainResult
	for {
		ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: ns, Queues: []string{q}, TTR: o.TTR})
		if err != nil {
			tb.Fatalf("queuetest: drain %s/%s: consume: %v", ns, q, err)
			return res
		}
		if len(ds) == 0 {
			return res
		}
		if len(res.Runs) == o.MaxRuns {
			tb.Fatalf("queuetest: drain %s/%s: still a ready job after %d runs (DrainOpts.MaxRuns)", ns, q, o.MaxRuns)
			return res
		}
		d := ds[0]
		run := Run{Delivery: d, Err: call(queue.ContextWithDelivery(ctx, d), h, &d)}
		if run.Err == nil {
			err = c.Ack(ctx, queue.AckParams{Namespace: ns, Queue: q, ID: d.ID, Delivery: d.Delivery})
			run.Outcome = Acked
		} else {
			var n queue.NackOutcome
			n, err = c.Nack(ctx, queue.NackParamsFor(&d, run.Err, o.RetryPolicy))
			run.Outcome = Outcome(n)
		}
		if err != nil {
			tb.Fatalf("queuetest: drain %s/%s: settle job %s: %v", ns, q, d.ID, err)
			return res
		}
		res.Runs = append(res.Runs, run)
	}
}

// DrainQueue is Drain for a typed queue: each job's payload is decoded with the queue's codec and
// handed to handle. A payload that does not decode goes to the dead letter, as with a worker.
func DrainQueue[T any](ctx context.Context, tb testing.TB, q *queue.Queue[T], handle func(ctx context.Context, v *T) error, opts *DrainOpts) DrainResult {
	tb.Helper()
	return Drain(ctx, tb, q.Client(), q.Namespace(), q.Name(), func(ctx context.Context, d *queue.Delivery) error {
		v, err := q.Decode(d.Payload)
		if err != nil {
			return queue.SkipRetry(fmt.Errorf("queue: decode payload: %w", err))
		}
		return handle(ctx, v)
	}, opts)
}

// call runs h, turning a panic into a *queue.PanicError as a worker does.
func call(ctx context.Context, h queue.Handler, d *queue.Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &queue.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, d)
}
