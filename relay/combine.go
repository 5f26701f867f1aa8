package relay

import (
	"context"
	"sync"
)

// maxCombined bounds the calls merged into one script call.
const maxCombined = 128

// combiner merges concurrent calls on one key (an endpoint) into one script call. It is the
// queue package's combiner (kept unexported there).
//
// The combiner merges concurrent calls on one key into one script call: the first caller runs
// the calls waiting at that moment as a batch while later callers queue up; when the batch is done
// the leader hands the lead to the first waiting caller and returns. A lone caller runs at once, so
// combining costs no latency; under concurrency one script call (and one round trip) serves many
// callers, which is what makes single-job publishes, acks and consumes cheap on Redis.
//
// A batch runs on a context detached from its leader (other callers' work is in it), so cancelling
// one caller never fails the others; go-redis's timeouts bound it.
type combiner[Req, Res any] struct {
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

func newCombiner[Req, Res any](run func(ctx context.Context, key string, reqs []Req) ([]Res, error)) *combiner[Req, Res] {
	return &combiner[Req, Res]{run: run, groups: make(map[string]*combineGroup[Req, Res])}
}

// do runs req, alone or merged with concurrent calls on the same key. A caller whose ctx ends
// while it waits for its batch withdraws (its request is not run) unless its batch already started;
// then it waits for the outcome, which go-redis's timeouts bound.
func (c *combiner[Req, Res]) do(ctx context.Context, key string, req Req) (Res, error) {
	call := &combineCall[Req, Res]{req: req, done: make(chan struct{}), lead: make(chan struct{})}
	c.mu.Lock()
	g, busy := c.groups[key]
	if !busy {
		g = &combineGroup[Req, Res]{}
		c.groups[key] = g
	}
	g.waiting = append(g.waiting, call)
	c.mu.Unlock()
	if busy {
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
	}
	c.lead(ctx, key, g)
	<-call.done
	return call.res, call.err
}

// withdraw removes a call that is still waiting and was not handed the lead, and reports whether it
// did. The lead is handed over under c.mu, so a call is either withdrawn or leads, never neither.
func (c *combiner[Req, Res]) withdraw(g *combineGroup[Req, Res], call *combineCall[Req, Res]) bool {
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
func (c *combiner[Req, Res]) lead(ctx context.Context, key string, g *combineGroup[Req, Res]) {
	c.mu.Lock()
	n := min(len(g.waiting), maxCombined)
	batch := g.waiting[:n:n]
	g.waiting = g.waiting[n:]
	c.mu.Unlock()

	reqs := make([]Req, len(batch))
	for i, call := range batch {
		reqs[i] = call.req
	}
	res, err := c.run(context.WithoutCancel(ctx), key, reqs)
	for i, call := range batch {
		if err != nil {
			call.err = err
		} else {
			call.res = res[i]
		}
		close(call.done)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(g.waiting) == 0 {
		delete(c.groups, key)
		return
	}
	close(g.waiting[0].lead)
}
