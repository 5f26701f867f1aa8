package queue

import (
	"context"
	"sync"
)

// maxCoalesce bounds the jobs one coalesced publish carries.
const maxCoalesce = 1000

// produceBatcher coalesces concurrent Produce calls of one Queue (a group commit): a caller that
// finds no publish in flight sends its job at once; callers that arrive while one is in flight
// wait and are sent together, in one PublishMany, by the first of them. A lone producer pays one
// round trip per job as before; many concurrent producers share round trips.
//
// No goroutine is started: the caller whose turn it is sends. A caller whose context ends before
// its job was taken into a batch withdraws it; once taken, it waits for the outcome (bounded by
// callTimeout), as it would for any call already sent.
type produceBatcher struct {
	mu      sync.Mutex
	busy    bool // a caller is sending
	pending []*produceReq
}

type produceReq struct {
	p    PublishParams
	done chan struct{} // closed when served, or when this caller must send next
	lead bool          // set before done is closed: this caller sends the next batch
	id   string
	err  error
}

func (b *produceBatcher) produce(ctx context.Context, c *Client, p PublishParams) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	// Validate alone, so one bad job never fails the batch it would have joined.
	if _, err := c.publishArgs(p); err != nil {
		return "", err
	}
	r := &produceReq{p: p, done: make(chan struct{})}
	b.mu.Lock()
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		b.send(ctx, c, []*produceReq{r})
		return r.id, r.err
	}
	b.pending = append(b.pending, r)
	b.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		b.mu.Lock()
		for i, q := range b.pending {
			if q == r {
				b.pending = append(b.pending[:i], b.pending[i+1:]...)
				b.mu.Unlock()
				return "", ctx.Err()
			}
		}
		b.mu.Unlock()
		<-r.done // taken into a batch, or chosen to send the next one
	}
	if r.lead {
		b.mu.Lock()
		batch := append([]*produceReq{r}, b.take(maxCoalesce-1)...)
		b.mu.Unlock()
		b.send(ctx, c, batch)
	}
	return r.id, r.err
}

// take removes up to limit pending requests; the caller holds b.mu.
func (b *produceBatcher) take(limit int) []*produceReq {
	n := min(len(b.pending), limit)
	batch := make([]*produceReq, n)
	copy(batch, b.pending[:n])
	b.pending = append(b.pending[:0], b.pending[n:]...)
	return batch
}

// send publishes a batch, serves its callers and passes the turn to the next waiting caller. The
// call runs on a context the sender's cancellation does not end: the batch carries other callers'
// jobs.
func (b *produceBatcher) send(ctx context.Context, c *Client, batch []*produceReq) {
	if len(batch) > 0 {
		ps := make([]PublishParams, len(batch))
		for i, r := range batch {
			ps[i] = r.p
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
		res, err := c.PublishMany(sctx, ps)
		cancel()
		for i, r := range batch {
			if err != nil {
				r.err = err
			} else {
				r.id = res[i].ID
			}
		}
	}
	b.mu.Lock()
	var next *produceReq
	if len(b.pending) > 0 {
		// Out of pending, so it can no longer withdraw: it must send.
		next = b.pending[0]
		b.pending = b.pending[1:]
		next.lead = true
	} else {
		b.busy = false
	}
	b.mu.Unlock()
	for _, r := range batch {
		if !r.lead { // a sender's done was closed when it got the turn
			close(r.done)
		}
	}
	if next != nil {
		close(next.done)
	}
}
