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

// maxHolder bounds a holder's length.
const maxHolder = 256

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
// *FieldError. Neither changes anything in Redis. When ctx ends first the error is ctx's and
// nothing is held (but for a slot granted as ctx ended, which frees itself at its expiry).
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
	member := "slot:" + holder
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
		r, err := c.run(ctx, scriptSlotTake, endpoint, member, ms(hold), e.Concurrency, spacedQPS(e), e.burst(),
			rateLookahead.Milliseconds()).Int64Slice()
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

// Release gives the slot back and wakes the endpoint's dispatchers. Releasing twice, or a slot
// that freed itself at its expiry, does nothing.
func (s *Slot) Release(ctx context.Context) error {
	if s.freed.Swap(true) {
		return nil
	}
	if err := s.c.run(ctx, scriptSlotFree, s.Endpoint, s.member).Err(); err != nil {
		s.freed.Store(false)
		return fmt.Errorf("relay: release slot of %s: %w", s.Endpoint, err)
	}
	return nil
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
