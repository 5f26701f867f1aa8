package queue

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue/internal/store"
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
	channels := []string{c.store.Channel(ns, q)}
	var out []heldJob
	err := c.waitFor(stop, channels, wait, func() (bool, time.Duration, error) {
		var wake time.Duration
		var err error
		out, wake, err = c.fetchOnce(stop, p, fallback)
		return len(out) > 0, wake, err
	})
	if stop.Err() != nil && len(out) == 0 {
		return nil, nil // stopping is not a failure
	}
	return out, err
}

// fetchOnce runs the consume script once; fallback is the lease assumed for a delivery that does
// not report its lease end.
func (c *Client) fetchOnce(stop context.Context, p ConsumeParams, fallback time.Duration) ([]heldJob, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stop), callTimeout)
	defer cancel()
	sent := time.Now()
	ds, wake, err := c.consumeOnce(ctx, p)
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
	errs, err := c.store.TouchMany(ctx, leasesOf(ds), ttr.Milliseconds())
	return leaseErrors("touch", errs, err)
}

// releaseMany gives many leased deliveries back (Release) in one pipelined round trip.
func (c *Client) releaseMany(ctx context.Context, ds []*Delivery) ([]error, error) {
	errs, err := c.store.ReleaseMany(ctx, leasesOf(ds))
	return leaseErrors("release", errs, err)
}

// leasesOf names the leases of ds.
func leasesOf(ds []*Delivery) []store.Lease {
	leases := make([]store.Lease, len(ds))
	for i, d := range ds {
		leases[i] = store.Lease{Namespace: d.Namespace, Queue: d.Queue, ID: d.ID, Delivery: d.Delivery}
	}
	return leases
}

// leaseErrors maps the outcomes of pipelined lease calls (leaseError).
func leaseErrors(op string, errs []error, err error) ([]error, error) {
	if err != nil {
		return nil, leaseError(op, err)
	}
	for i, e := range errs {
		if e != nil {
			errs[i] = leaseError(op, e)
		}
	}
	return errs, nil
}
