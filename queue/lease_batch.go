package queue

import (
	"context"

	"github.com/sluicehq/sluice/queue/internal/store"
)

// leaseReq is one ack (or finish) or one consume of a queue. Concurrent acks and consumes of one
// queue go through one combiner (Client.leaseComb), so that a consume and the acks waiting beside
// it share one script call: consume.lua does the acks first. A worker that acks a job and asks for
// the next one, the usual cycle, then costs Redis one call where it cost two.
type leaseReq struct {
	consume bool
	ack     store.Ack  // when !consume
	req     consumeReq // when consume
}

// leaseRes is the answer to one leaseReq: its own error, since the calls of one batch can fail
// apart (a consume that carries acks and an ack that keeps a result take separate script calls).
type leaseRes struct {
	ack     store.AckOutcome
	consume consumeRes
	err     error
}

// doLease runs req alone or in a batch with the concurrent acks and consumes of its queue.
func (c *Client) doLease(ctx context.Context, ns, q string, req leaseReq) (leaseRes, error) {
	res, err := c.leaseComb.do(ctx, ns+"\x00"+q, req)
	if err != nil {
		return leaseRes{}, err
	}
	return res, res.err
}

// runLeaseBatch answers a batch of acks and consumes of one queue. Consumes with one ttr share a
// script call (runConsume); the first such call carries the acks that keep no result, which
// consume.lua does before it leases. Acks that keep a result, and acks with no consume beside them,
// take the ack scripts (store.Ack). Every request gets its own outcome or error.
func (c *Client) runLeaseBatch(ctx context.Context, _ string, reqs []leaseReq) ([]leaseRes, error) {
	out := make([]leaseRes, len(reqs))
	var consumes [][]int // indexes into reqs, one group per ttr, in the order of arrival
	var acks, riders []int
	for i, r := range reqs {
		if !r.consume {
			acks = append(acks, i)
			continue
		}
		grouped := false
		for g, idx := range consumes {
			if reqs[idx[0]].req.ttr == r.req.ttr && reqs[idx[0]].req.maxBytes == r.req.maxBytes {
				consumes[g] = append(idx, i)
				grouped = true
				break
			}
		}
		if !grouped {
			consumes = append(consumes, []int{i})
		}
	}
	if len(consumes) > 0 {
		riders, acks = splitRiders(reqs, acks)
	}
	for g, idx := range consumes {
		var ride []int
		if g == 0 {
			ride = riders
		}
		c.runConsume(ctx, reqs, idx, ride, out)
	}
	if len(acks) > 0 {
		c.runAcks(ctx, reqs, acks, out)
	}
	return out, nil
}

// splitRiders splits the acks (indexes into reqs) into those a consume can carry (no result to
// keep) and the others.
func splitRiders(reqs []leaseReq, acks []int) (riders, rest []int) {
	for _, i := range acks {
		if reqs[i].ack.Result == nil {
			riders = append(riders, i)
		} else {
			rest = append(rest, i)
		}
	}
	return riders, rest
}

// runAcks acks reqs[idx...] in one script call (store.Ack) and sets their answers in out.
func (c *Client) runAcks(ctx context.Context, reqs []leaseReq, idx []int, out []leaseRes) {
	acks := make([]store.Ack, len(idx))
	for j, i := range idx {
		acks[j] = reqs[i].ack
	}
	outcomes, err := c.runAck(ctx, "", acks)
	for j, i := range idx {
		if err != nil {
			out[i].err = err
		} else {
			out[i].ack = outcomes[j]
		}
	}
}

// runAck acks deliveries of one queue in one script call (store.Ack); each gets its own outcome.
// The key is unused: the shape of a combiner's run.
func (c *Client) runAck(ctx context.Context, _ string, acks []store.Ack) ([]store.AckOutcome, error) {
	return c.store.Ack(ctx, acks)
}
