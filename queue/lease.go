package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue/internal/store"
)

// AckParams name a delivery to finish.
type AckParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
	// Result, when not nil, is kept with the job (state done) for Config.ResultRetention; without
	// one the job is removed at once.
	Result []byte
}

// Ack finishes a delivery. It returns ErrLeaseLost when the lease expired or a later delivery holds
// the job, and ErrNotFound when the job is gone; either way nothing changes. Concurrent Ack calls
// on one queue share one script call, with the consumes of that queue when there are any.
func (c *Client) Ack(ctx context.Context, p AckParams) error {
	if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
		return err
	}
	res, err := c.doLease(ctx, p.Namespace, p.Queue, leaseReq{ack: store.Ack(p)})
	if err != nil {
		return fmt.Errorf("queue: ack: %w", err)
	}
	return ackError(res.ack)
}

// Finish ends a job whatever its state, as lmstfy's ack does (it names no delivery): a job under
// a running lease is acked as that delivery (it counts as done), any other job is deleted. It
// returns ErrNotFound when there is no such job. Concurrent Finish and Ack calls on one queue
// share one script call; a finish of a job under no running lease takes a second one.
func (c *Client) Finish(ctx context.Context, ns, q, id string) error {
	if err := validateLease(ns, q, id, 1); err != nil {
		return err
	}
	res, err := c.doLease(ctx, ns, q, leaseReq{ack: store.Ack{Namespace: ns, Queue: q, ID: id, Delivery: store.FinishAny}})
	if err != nil {
		return fmt.Errorf("queue: finish: %w", err)
	}
	return ackError(res.ack)
}

// ackError is the error of an ack's outcome: nil, ErrNotFound or ErrLeaseLost.
func ackError(o store.AckOutcome) error {
	switch o {
	case store.AckNotFound:
		return ErrNotFound
	case store.AckLeaseLost:
		return ErrLeaseLost
	default:
		return nil
	}
}

// AckMany finishes many deliveries: one script call per queue, pipelined. The error slice has one
// entry per ack (nil, ErrLeaseLost or ErrNotFound); the second return is for failures of the call
// itself (validation, Redis).
func (c *Client) AckMany(ctx context.Context, ps []AckParams) ([]error, error) {
	type group struct {
		idx  []int
		acks []store.Ack
	}
	var groups []*group
	byQueue := map[string]*group{}
	for i, p := range ps {
		if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
			return nil, inField(fmt.Sprintf("acks[%d]", i), err)
		}
		key := p.Namespace + "\x00" + p.Queue
		g := byQueue[key]
		if g == nil {
			g = &group{}
			byQueue[key] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
		g.acks = append(g.acks, store.Ack(p))
	}
	errs := make([]error, len(ps))
	collect := func(g *group, outcomes []store.AckOutcome) {
		for j, i := range g.idx {
			errs[i] = ackError(outcomes[j])
		}
	}
	if len(groups) == 1 {
		outcomes, err := c.store.Ack(ctx, groups[0].acks)
		if err != nil {
			return nil, fmt.Errorf("queue: ack: %w", err)
		}
		collect(groups[0], outcomes)
		return errs, nil
	}
	batches := make([][]store.Ack, len(groups))
	for i, g := range groups {
		batches[i] = g.acks
	}
	outcomes, err := c.store.AckQueues(ctx, batches)
	if err != nil {
		return nil, fmt.Errorf("queue: ack: %w", err)
	}
	for i, g := range groups {
		collect(g, outcomes[i])
	}
	return errs, nil
}

// NackParams name a failed delivery.
type NackParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
	// Error is kept as the job's LastError.
	Error string
	// RetryAfter, when not nil, is the delay before the next try; nil uses the job's Backoff.
	RetryAfter *time.Duration
	// NoRetry sends the job to the dead letter now, whatever tries it has left.
	NoRetry bool
}

// NackOutcome says what a nack did with the job.
type NackOutcome string

// What a nack can do.
const (
	NackRetried NackOutcome = "retried" // another try is scheduled
	NackDead    NackOutcome = "dead"    // no tries left (or NoRetry): in the dead letter
	NackExpired NackOutcome = "expired" // the ttl ends before the next try: gone
)

// Nack reports a failed delivery: the job is tried again after RetryAfter (or its backoff) while
// it has tries left, else it goes to the dead letter. A client that traces keeps the span of ctx
// (a worker's process span, an HTTP nack's request span) with the job, and the next delivery's
// span links to it (docs/tracing.md).
func (c *Client) Nack(ctx context.Context, p NackParams) (NackOutcome, error) {
	retry, err := failedDelivery(p.Namespace, p.Queue, p.ID, p.Delivery, p.RetryAfter)
	if err != nil {
		return "", err
	}
	out, err := c.store.Nack(ctx, p.Namespace, p.Queue, p.ID, p.Delivery, p.Error, retry, p.NoRetry, c.tracer.AttemptRef(ctx, p.Delivery))
	if err != nil {
		return "", leaseError("nack", err)
	}
	return NackOutcome(out), nil
}

// failedDelivery checks a failed delivery's lease and returns its RetryAfter in ms, -1 for none
// (the job's backoff): Nack's and FinishCallback's arguments.
func failedDelivery(ns, q, id string, delivery int, after *time.Duration) (int64, error) {
	if err := validateLease(ns, q, id, delivery); err != nil {
		return 0, err
	}
	if after == nil {
		return -1, nil
	}
	if *after < 0 {
		return 0, invalid("retry_after", "must not be negative")
	}
	return ceilMillis(*after), nil
}

// TouchParams name a lease to extend.
type TouchParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
	// TTR is the new lease length from now. 0: the job's own TTR.
	TTR time.Duration
}

// Touch extends a lease to now + TTR and returns its new end.
func (c *Client) Touch(ctx context.Context, p TouchParams) (time.Time, error) {
	if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
		return time.Time{}, err
	}
	if p.TTR < 0 {
		return time.Time{}, invalid("ttr", "must not be negative")
	}
	if p.TTR > 0 && p.TTR < time.Millisecond {
		return time.Time{}, invalid("ttr", "must be at least 1ms")
	}
	until, err := c.store.Touch(ctx, p.Namespace, p.Queue, p.ID, p.Delivery, p.TTR.Milliseconds())
	if err != nil {
		return time.Time{}, leaseError("touch", err)
	}
	return time.UnixMilli(until), nil
}

// ReleaseParams name a lease to give back.
type ReleaseParams struct {
	Namespace string
	Queue     string
	ID        string
	Delivery  int
}

// Release gives a leased job back unprocessed: it goes to the head of the ready jobs of its
// priority and the try it used is returned, so another consumer gets it at once and no failure is
// counted. Workers call it for jobs they fetched but will not run (shutdown).
func (c *Client) Release(ctx context.Context, p ReleaseParams) error {
	if err := validateLease(p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
		return err
	}
	if err := c.store.Release(ctx, p.Namespace, p.Queue, p.ID, p.Delivery); err != nil {
		return leaseError("release", err)
	}
	return nil
}

// leaseError answers the store's ErrNotFound and ErrLeaseLost with the queue's, and wraps any
// other error.
func leaseError(op string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ErrNotFound
	case errors.Is(err, store.ErrLeaseLost):
		return ErrLeaseLost
	default:
		return fmt.Errorf("queue: %s: %w", op, err)
	}
}

func validateLease(ns, q, id string, delivery int) error {
	if err := validateQueue(ns, q); err != nil {
		return err
	}
	if err := validateID(id); err != nil {
		return err
	}
	if delivery < 1 {
		return invalid("delivery", "must be at least 1 (the number a consume returned)")
	}
	return nil
}

func validateID(id string) error {
	if id == "" || len(id) > 255 {
		return invalid("job_id", "must be 1..255 bytes")
	}
	return nil
}
