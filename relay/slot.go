package relay

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// A Slot is one of an endpoint's concurrency slots, taken together with a token of its rate
// limit by a caller that makes the call itself rather than as a task: the callback deliverer
// takes one for every callback whose URL is under an endpoint's target URL, so tasks and
// callbacks to one service share one budget. While held it counts in the endpoint's running
// calls (EndpointStats.Running and Slots) and in the concurrency every dispatch script checks.
// Release it after the call; a holder that dies frees it at Expires.
type Slot struct {
	c      *Client
	member string
	freed  atomic.Bool

	// Endpoint and Holder are what AcquireSlot was given.
	Endpoint, Holder string
	// Expires is when the slot frees itself if it is not released (by Redis's clock, placed on
	// this process's clock when it was granted).
	Expires time.Time
}

// slotPoll bounds how long AcquireSlot waits for a full endpoint without asking Redis again: a
// slot freed at its expiry, or a wake-up lost while the subscription reconnected, wakes nobody.
const slotPoll = 250 * time.Millisecond

// maxHolder bounds a holder's length: room for a callback's namespace and queue (255 bytes each
// at most), job id and delivery number.
const maxHolder = 1024

// slotPrefix starts the members of the slots in an endpoint's running set (lua/lib.lua): no task
// id starts with it.
const slotPrefix = "slot:"

// AcquireSlot takes one of endpoint's concurrency slots and one token of its rate limit for a
// call the caller makes itself, waiting (with one Pub/Sub subscription shared by the Client,
// woken when a task ends or a slot is released) until both are free or ctx ends. It returns when
// the call may start: a rate-limited slot is granted with its token a few milliseconds ahead, and
// AcquireSlot waits for that time before it returns. The slot frees itself hold after the call's
// start unless Released before (so hold should cover the call's timeout). holder names the
// caller's call (a callback job's id and delivery): a holder that already holds a slot of the
// endpoint gets it again, with its expiry renewed and no second slot or token.
//
// An unknown endpoint is ErrNotFound; an empty or overlong holder and a hold below 1ms are a
// *sluice.FieldError. Neither changes anything in Redis. When ctx ends first the error is ctx's
// and nothing is held (but for a slot granted as ctx ended, which frees itself at its expiry).
func (c *Client) AcquireSlot(ctx context.Context, endpoint, holder string, hold time.Duration) (*Slot, error) {
	switch {
	case holder == "" || len(holder) > maxHolder:
		return nil, fieldErr("holder", "must be 1 to %d bytes", maxHolder)
	case hold < time.Millisecond:
		return nil, fieldErr("hold", "must be at least 1ms")
	}
	if !validName(endpoint) {
		return nil, fmt.Errorf("%w: endpoint %q", ErrNotFound, endpoint)
	}
	member := slotPrefix + holder
	var mine chan struct{}
	stopWatch := func() {}
	defer func() { stopWatch() }()
	for {
		e, err := c.Endpoint(ctx, endpoint)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, fmt.Errorf("%w: endpoint %q", ErrNotFound, endpoint)
			}
			return nil, err
		}
		r, err := c.slotTakes.Do(ctx, endpoint, slotReq{e: e, member: member, hold: hold})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("relay: acquire slot of %s: %w", endpoint, err)
		}
		answered := time.Now()
		var wait time.Duration
		var woken <-chan struct{}
		switch r[0] {
		case 0:
			delay := time.Duration(r[1]) * time.Microsecond
			s := &Slot{c: c, member: member, Endpoint: endpoint, Holder: holder, Expires: answered.Add(delay + hold)}
			if delay > 0 {
				// The token is due delay after Redis's time in the script, which came before the
				// answer: waiting delay from the answer never starts the call early.
				if err := sleepCtx(ctx, delay); err != nil {
					_ = s.Release(context.WithoutCancel(ctx))
					return nil, err
				}
			}
			return s, nil
		case 1:
			wait = time.Duration(r[1]) * time.Millisecond
		default:
			if mine == nil {
				// Registered before asking again, so a slot freed in between is not missed.
				mine = make(chan struct{}, 1)
				w, err := c.watch(ctx, func(payload string) {
					if payload == endpoint {
						select {
						case mine <- struct{}{}:
						default:
						}
					}
				}, c.ch.wake)
				if err != nil {
					return nil, fmt.Errorf("relay: acquire slot of %s: %w", endpoint, err)
				}
				stopWatch = w.Stop
				continue
			}
			wait, woken = slotPoll, mine
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-woken:
		case <-t.C:
		}
		t.Stop()
	}
}

// HoldSlot is AcquireSlot for a caller that only gives the slot back: it returns the slot's
// Release. It lets the callback deliverer take slots through an interface (callback.EndpointSlots)
// that does not name Slot.
func (c *Client) HoldSlot(ctx context.Context, endpoint, holder string, hold time.Duration) (func(context.Context) error, error) {
	s, err := c.AcquireSlot(ctx, endpoint, holder, hold)
	if err != nil {
		return nil, err
	}
	return s.Release, nil
}

// Release gives the slot back and wakes the endpoint's dispatchers. Releasing twice, or a slot
// that freed itself at its expiry, does nothing.
func (s *Slot) Release(ctx context.Context) error {
	if s.freed.Swap(true) {
		return nil
	}
	if _, err := s.c.slotFrees.Do(ctx, s.Endpoint, s.member); err != nil {
		s.freed.Store(false)
		return fmt.Errorf("relay: release slot of %s: %w", s.Endpoint, err)
	}
	return nil
}

// slotReq is one AcquireSlot's ask in a combined slot_take.lua call.
type slotReq struct {
	e      Endpoint
	member string
	hold   time.Duration
}

// runSlotTakes asks for the slots of concurrent AcquireSlot calls on one endpoint in one script
// call; the endpoint settings are the first caller's (they differ only across a settings change,
// which applies within the refresh interval anyway). Each answer is {code, value} (slot_take.lua).
func (c *Client) runSlotTakes(ctx context.Context, endpoint string, reqs []slotReq) ([][2]int64, error) {
	e := reqs[0].e
	args := make([]any, 0, 7+2*len(reqs))
	args = append(args, e.Concurrency, spacedQPS(e), e.burst(), rateLookahead.Milliseconds(), e.window(), logSpan.Milliseconds(), len(reqs))
	for _, r := range reqs {
		args = append(args, r.member, ms(r.hold))
	}
	raw, err := c.run(ctx, scriptSlotTake, endpoint, args...).Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(raw) != 1+2*len(reqs) {
		return nil, fmt.Errorf("relay: slot_take answered %d values for %d slots", len(raw), len(reqs))
	}
	out := make([][2]int64, len(reqs))
	for i := range out {
		out[i] = [2]int64{raw[1+2*i], raw[2+2*i]}
	}
	return out, nil
}

// runSlotFrees gives back the slots of concurrent Release calls on one endpoint in one script
// call.
func (c *Client) runSlotFrees(ctx context.Context, endpoint string, members []string) ([]int64, error) {
	args := make([]any, 0, 1+len(members))
	args = append(args, len(members))
	for _, m := range members {
		args = append(args, m)
	}
	return c.run(ctx, scriptSlotFree, endpoint, args...).Int64Slice()
}

// sleepCtx waits d or until ctx ends (then returning its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
