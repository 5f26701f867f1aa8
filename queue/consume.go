package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sluicehq/sluice/queue/internal/store"
)

// errClosed is returned by a blocking Consume on a closed Client.
var errClosed = errors.New("queue: client closed")

// ErrClosed is returned by a Consume that waits (Timeout > 0) on a closed Client. Other calls keep
// working after Close, which does not close the Redis client.
var ErrClosed = errClosed

// MaxConsumeCount bounds ConsumeParams.Count.
const MaxConsumeCount = 1000

// MaxConsumeQueues bounds ConsumeParams.Queues: a consume reads its queues one script call each,
// in order, and one naming 60,000 queues kept a server busy for seconds.
const MaxConsumeQueues = 100

// ConsumeParams describe one consume call.
type ConsumeParams struct {
	Namespace string
	// Queues are read in order: a job of an earlier queue is taken before any job of a later one.
	// 1..MaxConsumeQueues of them.
	Queues []string
	// Count is the most jobs to lease (1..1000). 0: 1.
	Count int
	// TTR is the lease length. 0: each job's own TTR.
	TTR time.Duration
	// Timeout is how long to wait for a job when none is ready. 0: answer at once.
	Timeout time.Duration
}

// Consume leases up to Count ready jobs. With a Timeout it blocks until at least one job is ready
// or the timeout passes (then it returns no jobs and no error); it wakes as soon as a job is
// published, and on time for a delayed job or an expiring lease, without polling.
//
// Each queue costs one script call; a call on one queue is one round trip.
func (c *Client) Consume(ctx context.Context, p ConsumeParams) ([]Delivery, error) {
	if err := c.validateConsume(&p); err != nil {
		return nil, err
	}
	channels := make([]string, len(p.Queues))
	for i, q := range p.Queues {
		channels[i] = c.store.Channel(p.Namespace, q)
	}
	var out []Delivery
	if c.tracer != nil {
		defer c.traceReceived(ctx, time.Now(), &out)
	}
	err := c.waitFor(ctx, channels, p.Timeout, func() (bool, time.Duration, error) {
		var wake time.Duration
		var err error
		out, wake, err = c.consumeOnce(ctx, p)
		return len(out) > 0, wake, err
	})
	return out, err
}

// waitFor calls try until it finds something, fails, or wait passes (at once when wait is 0).
// Between tries it sleeps until a notification on channels, the wake-up time try reported (the next
// due job or lease end), or WakeupInterval, whichever comes first: no polling. It registers for
// notifications before each try, so a publish between the try and the sleep still wakes it. It
// returns ctx's error when ctx ends and ErrClosed when the client is closed.
func (c *Client) waitFor(ctx context.Context, channels []string, wait time.Duration, try func() (found bool, wake time.Duration, err error)) error {
	deadline := time.Now().Add(wait)
	for {
		var w *waiter
		if wait > 0 {
			var err error
			if w, err = c.notify.register(ctx, channels); err != nil {
				if errors.Is(err, errClosed) || ctx.Err() != nil {
					return err
				}
				return fmt.Errorf("queue: subscribe for wake-ups: %w", err)
			}
		}
		found, wake, err := try()
		sleep := time.Until(deadline)
		if err != nil || found || wait <= 0 || sleep <= 0 {
			if w != nil {
				c.notify.unregister(w)
			}
			return err
		}
		untilDeadline := wake <= 0 || wake >= sleep
		if !untilDeadline {
			sleep = wake
		}
		recheck := jittered(c.cfg.WakeupInterval)
		timer := time.NewTimer(min(sleep, recheck))
		notified := false
		select {
		case <-w.C:
			notified = true
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		c.notify.unregister(w)
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.notify.isClosed() {
			return ErrClosed
		}
		if !notified && untilDeadline && sleep <= recheck && !pending(w) {
			// The wait ran out with nothing notified and nothing due in between: a last look
			// would find what the previous one found, so the wait ends without a Redis call.
			return nil
		}
	}
}

// jittered returns a duration between three quarters of d and d, so that waiters that began
// together re-check Redis at different moments.
func jittered(d time.Duration) time.Duration {
	return d - rand.N(d/4+1)
}

// pending reports whether the waiter was notified (and consumes the notification).
func pending(w *waiter) bool {
	select {
	case <-w.C:
		return true
	default:
		return false
	}
}

// consumeOnce runs the consume script on each queue in order until Count jobs are leased. wake is
// how long until time next changes something in these queues (0: nothing scheduled).
// The jobs' records and ids carry at most Config.MaxConsumeBytes in all: each call gets what is left
// of it (store.ConsumeAcking), and a call whose answer filled it ends the consume.
func (c *Client) consumeOnce(ctx context.Context, p ConsumeParams) ([]Delivery, time.Duration, error) {
	var out []Delivery
	var wake time.Duration
	left := int64(c.cfg.MaxConsumeBytes)
	for i, q := range p.Queues {
		for len(out) < p.Count && left > 0 {
			// After the first jobs, a job over what is left waits for the next consume.
			maxBytes := left
			if len(out) > 0 {
				maxBytes = -left
			}
			req := consumeReq{ns: p.Namespace, q: q, count: p.Count - len(out), ttr: p.TTR.Milliseconds(), maxBytes: maxBytes}
			lr, err := c.doLease(ctx, req.ns, req.q, leaseReq{consume: true, req: req})
			res := lr.consume
			if err != nil {
				if len(out) > 0 {
					// Jobs of earlier queues are leased: they must reach the caller, who would drop
					// them next to an error. The failure shows again on the next call.
					return out, wake, nil
				}
				return out, 0, fmt.Errorf("queue: consume %s/%s: %w", p.Namespace, p.Queues[i], err)
			}
			out = append(out, res.jobs...)
			left -= res.bytes
			if res.full {
				left = 0
			}
			if res.next > 0 {
				if w := time.Duration(res.next-res.now) * time.Millisecond; wake == 0 || w < wake {
					wake = max(w, time.Millisecond)
				}
			}
			if !res.more {
				break
			}
		}
	}
	return out, wake, nil
}

// consumeReq asks one queue for up to count jobs; concurrent requests on one queue with the same
// ttr are served by one script call, with the acks of that queue waiting beside them
// (lease_batch.go).
type consumeReq struct {
	ns, q    string
	count    int
	ttr      int64
	maxBytes int64 // store.ConsumeAcking's bound of the answer
}

type consumeRes struct {
	jobs      []Delivery
	now, next int64 // Redis time of the call; next due job or lease end (-1: none)
	more      bool  // jobs may be left that this request did not get: call again
	full      bool  // the answer reached its byte bound
	bytes     int64 // what the jobs counted against the bound (store.Job.Size)
}

// runConsume leases jobs for the consumes reqs[idx...] (one queue, one ttr) in one script call and
// shares them out in order; the acks reqs[riders...] ride along (consume.lua does them first).
// It sets their answers in out.
func (c *Client) runConsume(ctx context.Context, reqs []leaseReq, idx, riders []int, out []leaseRes) {
	first := reqs[idx[0]].req
	total := 0
	for _, i := range idx {
		total += reqs[i].req.count
	}
	want := min(total, MaxConsumeCount)
	var acks []store.Ack
	if len(riders) > 0 {
		acks = make([]store.Ack, len(riders))
		for j, i := range riders {
			acks[j] = reqs[i].ack
		}
	}
	leased, outcomes, err := c.store.ConsumeAcking(ctx, first.ns, first.q, want, first.ttr, first.maxBytes, acks)
	if err != nil {
		for _, i := range append(idx, riders...) {
			out[i].err = err
		}
		return
	}
	if len(acks) > 0 {
		err := c.store.AckLeft(ctx, acks, outcomes)
		for j, i := range riders {
			out[i].ack, out[i].err = outcomes[j], err
		}
	}
	jobs := make([]Delivery, len(leased.Jobs))
	for j := range leased.Jobs {
		jobs[j] = jobOf(first.ns, first.q, &leased.Jobs[j]).delivery()
		jobs[j].Elapsed = time.Duration(leased.Now-jobs[j].PublishedAt.UnixMilli()) * time.Millisecond
	}
	// The queue may hold more when the script stopped early or the batch was capped.
	mayHaveMore := leased.More || (leased.Count == want && total > want)
	sized := leased.Jobs
	for _, i := range idx {
		r := reqs[i].req
		take := min(r.count, len(jobs))
		var size int64
		for _, j := range sized[:take] {
			size += j.Size
		}
		out[i].consume = consumeRes{jobs: jobs[:take:take], now: leased.Now, next: leased.Next,
			more: mayHaveMore && take < r.count, full: leased.Full, bytes: size}
		jobs, sized = jobs[take:], sized[take:]
	}
}

func (c *Client) validateConsume(p *ConsumeParams) error {
	if !validName(p.Namespace) {
		return invalid("namespace", "%q %s", p.Namespace, nameRule)
	}
	if len(p.Queues) == 0 {
		return invalid("queues", "name at least one queue")
	}
	if len(p.Queues) > MaxConsumeQueues {
		return invalid("queues", "%d queues is over the limit of %d", len(p.Queues), MaxConsumeQueues)
	}
	seen := make(map[string]bool, len(p.Queues))
	for _, q := range p.Queues {
		if !validName(q) {
			return invalid("queues", "%q %s", q, nameRule)
		}
		if seen[q] {
			return invalid("queues", "%q is named twice", q)
		}
		seen[q] = true
	}
	if p.Count == 0 {
		p.Count = 1
	}
	if p.Count < 1 || p.Count > MaxConsumeCount {
		return invalid("count", "%d is outside 1..%d", p.Count, MaxConsumeCount)
	}
	if p.TTR < 0 {
		return invalid("ttr", "must not be negative")
	}
	if p.TTR > 0 && p.TTR < time.Millisecond {
		return invalid("ttr", "must be at least 1ms")
	}
	if p.Timeout < 0 {
		return invalid("timeout", "must not be negative")
	}
	return nil
}
