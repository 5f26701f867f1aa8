// Package combine merges concurrent calls on one key into one call: the calls that wait while a
// batch runs go together in the next batch. Package queue uses it to publish, ack and consume,
// and package relay to submit, with one script call (one round trip) per batch.
package combine

import (
	"context"
	"fmt"
	"sync"
)

// MaxBatch bounds the calls merged into one batch.
const MaxBatch = 128

// Combiner merges concurrent calls on one key (a queue, an endpoint) into one script call: the
// first caller runs the calls waiting at that moment as a batch while later callers queue up; when
// the batch is done the leader hands the lead to the first waiting caller and returns. A caller
// that finds nothing in flight on its key runs its call alone and at once, without the hand-over
// (no channels, no waiting list), so combining costs a lone caller neither latency nor
// allocations; under concurrency one script call (and one round trip) serves many callers, which
// is what makes single publishes, acks, consumes and submits cheap on Redis.
//
// A batch runs on a context detached from its leader (other callers' work is in it), so cancelling
// one caller never fails the others; go-redis's timeouts bound it.
type Combiner[Req, Res any] struct {
	run func(ctx context.Context, key string, reqs []Req) ([]Res, error)

	mu     sync.Mutex
	groups map[string]*combineGroup[Req, Res]
}

type combineGroup[Req, Res any] struct {
	waiting []*combineCall[Req, Res]
}

type combineCall[Req, Res any] struct {
	req  Req
	res  Res
	err  error
	done chan struct{} // closed when res and err are set
	lead chan struct{} // closed when this call must lead the next batch
}

// New returns a Combiner that runs batches with run, which answers reqs in order.
func New[Req, Res any](run func(ctx context.Context, key string, reqs []Req) ([]Res, error)) *Combiner[Req, Res] {
	return &Combiner[Req, Res]{run: run, groups: make(map[string]*combineGroup[Req, Res])}
}

// Do runs req, alone or merged with concurrent calls on the same key. A caller whose ctx ends
// while it waits for its batch withdraws (its request is not run) unless its batch already started;
// then it waits for the outcome, which go-redis's timeouts bound.
func (c *Combiner[Req, Res]) Do(ctx context.Context, key string, req Req) (Res, error) {
	c.mu.Lock()
	g, busy := c.groups[key]
	if !busy {
		// Nothing in flight: run alone now. Calls that come meanwhile wait in g, and the first of
		// them leads the next batch once this one is done.
		g = &combineGroup[Req, Res]{}
		c.groups[key] = g
		c.mu.Unlock()
		res, err := c.runBatch(ctx, key, []Req{req})
		c.handOn(key, g)
		if err != nil {
			var zero Res
			return zero, err
		}
		return res[0], nil
	}
	call := &combineCall[Req, Res]{req: req, done: make(chan struct{}), lead: make(chan struct{})}
	g.waiting = append(g.waiting, call)
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.res, call.err
	case <-call.lead:
	case <-ctx.Done():
		if c.withdraw(g, call) {
			var zero Res
			return zero, ctx.Err()
		}
		select {
		case <-call.done:
			return call.res, call.err
		case <-call.lead:
		}
	}
	c.lead(ctx, key, g)
	<-call.done
	return call.res, call.err
}

// runBatch runs one batch on a context detached from the caller that leads it (see Combiner).
func (c *Combiner[Req, Res]) runBatch(ctx context.Context, key string, reqs []Req) ([]Res, error) {
	res, err := c.run(context.WithoutCancel(ctx), key, reqs)
	if err == nil && len(res) != len(reqs) {
		return nil, fmt.Errorf("combine: %d answers for %d calls", len(res), len(reqs))
	}
	return res, err
}

// withdraw removes a call that is still waiting and was not handed the lead, and reports whether it
// did. The lead is handed over under c.mu, so a call is either withdrawn or leads, never neither.
func (c *Combiner[Req, Res]) withdraw(g *combineGroup[Req, Res], call *combineCall[Req, Res]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-call.lead:
		return false
	default:
	}
	for i, w := range g.waiting {
		if w == call {
			g.waiting = append(g.waiting[:i:i], g.waiting[i+1:]...)
			return true
		}
	}
	return false // already in a running batch
}

// lead runs one batch of the group's waiting calls, then hands the lead on or ends the group.
func (c *Combiner[Req, Res]) lead(ctx context.Context, key string, g *combineGroup[Req, Res]) {
	c.mu.Lock()
	n := min(len(g.waiting), MaxBatch)
	batch := g.waiting[:n:n]
	g.waiting = g.waiting[n:]
	c.mu.Unlock()

	reqs := make([]Req, len(batch))
	for i, call := range batch {
		reqs[i] = call.req
	}
	res, err := c.runBatch(ctx, key, reqs)
	for i, call := range batch {
		if err != nil {
			call.err = err
		} else {
			call.res = res[i]
		}
		close(call.done)
	}
	c.handOn(key, g)
}

// handOn ends a batch: the first waiting call leads the next one, or the group ends.
func (c *Combiner[Req, Res]) handOn(key string, g *combineGroup[Req, Res]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(g.waiting) == 0 {
		delete(c.groups, key)
		return
	}
	close(g.waiting[0].lead)
}
