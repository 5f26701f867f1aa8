package queue

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The worker's calls into the engine that the public API does not offer in this shape: a blocking
// fetch that a shutdown can interrupt without ever abandoning a reply that carries leases, and
// pipelined touch and release of many deliveries.

// callTimeout bounds one worker call to Redis that runs on a context detached from the caller's.
const callTimeout = 10 * time.Second

// fetched is a delivery and where its lease ends on this machine's clock.
type fetched struct {
	d        Delivery
	lease    time.Duration // the lease length the script granted
	leaseEnd time.Time     // local clock
}

// fetch leases up to n ready jobs of one queue with the given ttr (0: each job's own; fallback is
// the lease assumed when a delivery does not report its lease end). While none
// is ready it waits, woken by notifications and timers as Consume is, until wait passes or stop
// ends; then it returns no jobs and no error. The script calls run on a context stop does not
// cancel, so a reply that carries leases is always read.
func (c *Client) fetch(stop context.Context, ns, q string, n int, ttr, fallback, wait time.Duration) ([]heldJob, error) {
	p := ConsumeParams{Namespace: ns, Queues: []string{q}, Count: n, TTR: ttr}
	keys := []queueKeys{c.keys.get(ns, q)}
	channels := []string{keys[0].channel}
	var out []heldJob
	err := c.waitFor(stop, channels, wait, func() (bool, time.Duration, error) {
		var wake time.Duration
		var err error
		out, wake, err = c.fetchOnce(stop, p, keys, fallback)
		return len(out) > 0, wake, err
	})
	if stop.Err() != nil && len(out) == 0 {
		return nil, nil // stopping is not a failure
	}
	return out, err
}

// fetchOnce runs the consume script once; fallback is the lease assumed for a delivery that does
// not report its lease end.
func (c *Client) fetchOnce(stop context.Context, p ConsumeParams, keys []queueKeys, fallback time.Duration) ([]heldJob, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stop), callTimeout)
	defer cancel()
	sent := time.Now()
	ds, wake, err := c.consumeOnce(ctx, p, keys)
	out := make([]heldJob, len(ds)) // one allocation for the batch
	for i, d := range ds {
		// The script's clock: publish time + elapsed. The lease length it granted is clock-free.
		lease := fallback
		if !d.LeaseUntil.IsZero() && !d.PublishedAt.IsZero() {
			lease = max(d.LeaseUntil.Sub(d.PublishedAt.Add(d.Elapsed)), time.Millisecond)
		}
		out[i].fetched = fetched{d: d, lease: lease, leaseEnd: sent.Add(lease)}
	}
	return out, wake, err
}

// touchMany extends the leases of many deliveries of one queue by ttr (0: each job's own) in one
// pipelined round trip. errs has one entry per delivery (nil, ErrLeaseLost, ErrNotFound).
func (c *Client) touchMany(ctx context.Context, ds []*Delivery, ttr time.Duration) ([]error, error) {
	return c.leaseMany(ctx, scriptTouch, "touch", ds, func(d *Delivery) []any {
		return []any{d.ID, d.Delivery, ttr.Milliseconds()}
	})
}

// releaseMany gives many leased deliveries back (Release) in one pipelined round trip.
func (c *Client) releaseMany(ctx context.Context, ds []*Delivery) ([]error, error) {
	return c.leaseMany(ctx, scriptRelease, "release", ds, func(d *Delivery) []any {
		return []any{d.ID, d.Delivery}
	})
}

func (c *Client) leaseMany(ctx context.Context, script scriptName, op string, ds []*Delivery, args func(*Delivery) []any) ([]error, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	calls := make([]scriptCall, len(ds))
	for i, d := range ds {
		calls[i] = scriptCall{script: script, keys: c.keys.get(d.Namespace, d.Queue), args: args(d)}
	}
	cmds, err := c.runMany(ctx, calls)
	if err != nil {
		return nil, leaseError(op, err)
	}
	errs := make([]error, len(ds))
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			errs[i] = leaseError(op, err)
		}
	}
	return errs, nil
}
