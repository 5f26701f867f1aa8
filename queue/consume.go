package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errClosed is returned by a blocking Consume on a closed Client.
var errClosed = errors.New("queue: client closed")

// ErrClosed is returned by calls on a Client after Close.
var ErrClosed = errClosed

// MaxConsumeCount bounds ConsumeParams.Count.
const MaxConsumeCount = 1000

// ConsumeParams describe one consume call.
type ConsumeParams struct {
	Namespace string
	// Queues are read in order: a job of an earlier queue is taken before any job of a later one.
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
	keys := make([]queueKeys, len(p.Queues))
	channels := make([]string, len(p.Queues))
	for i, q := range p.Queues {
		keys[i] = newQueueKeys(c.cfg.Prefix, p.Namespace, q)
		channels[i] = keys[i].channel
	}
	var deadline time.Time
	if p.Timeout > 0 {
		deadline = time.Now().Add(p.Timeout)
	}
	for {
		var w *waiter
		if p.Timeout > 0 {
			var err error
			if w, err = c.notify.register(ctx, channels); err != nil {
				return nil, fmt.Errorf("queue: consume: %w", err)
			}
		}
		out, wake, err := c.consumeOnce(ctx, p, keys)
		if err != nil || len(out) > 0 || p.Timeout == 0 {
			if w != nil {
				c.notify.unregister(w)
			}
			return out, err
		}
		sleep := time.Until(deadline)
		if sleep <= 0 {
			c.notify.unregister(w)
			return nil, nil
		}
		if wake > 0 && wake < sleep {
			sleep = wake
		}
		sleep = min(sleep, c.cfg.WakeupInterval)
		timer := time.NewTimer(sleep)
		select {
		case <-w.C:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		c.notify.unregister(w)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c.notify.isClosed() {
			return nil, ErrClosed
		}
	}
}

// consumeOnce runs the consume script on each queue in order until Count jobs are leased. wake is
// how long until time next changes something in these queues (0: nothing scheduled).
func (c *Client) consumeOnce(ctx context.Context, p ConsumeParams, keys []queueKeys) ([]Delivery, time.Duration, error) {
	var out []Delivery
	var wake time.Duration
	for i, k := range keys {
		for len(out) < p.Count {
			reply, err := c.run(ctx, scriptConsume, k, p.Count-len(out), p.TTR.Milliseconds()).Slice()
			if err != nil {
				return out, 0, fmt.Errorf("queue: consume %s/%s: %w", p.Namespace, p.Queues[i], err)
			}
			now, next, more, n := num(reply[0]), num(reply[1]), num(reply[2]), int(num(reply[3]))
			for j := range n {
				f := reply[4+j*fieldsPerJob : 4+(j+1)*fieldsPerJob]
				d := parseJob(p.Namespace, p.Queues[i], f).delivery()
				d.Elapsed = time.Duration(now-d.PublishedAt.UnixMilli()) * time.Millisecond
				out = append(out, d)
			}
			if next > 0 {
				if w := time.Duration(next-now) * time.Millisecond; wake == 0 || w < wake {
					wake = max(w, time.Millisecond)
				}
			}
			if more == 0 {
				break
			}
		}
	}
	return out, wake, nil
}

func (c *Client) validateConsume(p *ConsumeParams) error {
	if !validName(p.Namespace) {
		return invalid("namespace", "%q %s", p.Namespace, nameRule)
	}
	if len(p.Queues) == 0 {
		return invalid("queues", "name at least one queue")
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
