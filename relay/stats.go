package relay

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// EndpointStats are an endpoint's live numbers.
type EndpointStats struct {
	Endpoint Endpoint
	// Queued counts the tasks waiting for their turn; Retrying those waiting out a retry backoff;
	// Running the concurrency slots taken: the calls in flight and the permits out, and the
	// Slots.
	Queued, Retrying, Running int64
	// Slots counts the slots held by callers that make the call themselves (AcquireSlot: callbacks
	// under the endpoint's target URL); they are part of Running.
	Slots int64
	// SlotsReleased counts the slots given back after their call, SlotsExpired those freed at their
	// expiry (the holder died or hung), over the endpoint's life.
	SlotsReleased, SlotsExpired int64
	// CompletedPerSec is the rate of finished task calls over the last RateWindow (0 without
	// data). Calls made under a Slot are not in it: it is the rate at which tasks start while the
	// endpoint is busy, which the ETA needs.
	CompletedPerSec float64
	// AvgDuration is the measured mean task call duration over the last minute (0 without data).
	AvgDuration time.Duration
	// Rate is the start rate the ETA assumes (tasks per second); 0 when it cannot tell.
	Rate float64
	// Totals counts the tasks that ended, by status, over the endpoint's life.
	Totals map[Status]int64

	running int64
}

// ETA estimates how long a task with ahead tasks in front of it waits before it starts; false
// when it cannot tell (no measured calls, no AvgDuration and no QPS).
func (s EndpointStats) ETA(ahead int64) (time.Duration, bool) {
	return etaFor(s.Endpoint, s.Rate, ahead, s.running)
}

// RateWindow is the window of the measured completion rate.
const RateWindow = 10 * time.Second

// Stats returns an endpoint's live numbers (one read-only script), or ErrNotFound.
func (c *Client) Stats(ctx context.Context, name string) (EndpointStats, error) {
	e, err := c.Endpoint(ctx, name)
	if err != nil {
		return EndpointStats{}, err
	}
	raw, err := c.run(ctx, scriptStats, name).Slice()
	if err != nil {
		return EndpointStats{}, fmt.Errorf("relay: stats of %s: %w", name, err)
	}
	s := EndpointStats{
		Endpoint: e, Queued: raw[0].(int64), Retrying: raw[1].(int64), Running: raw[2].(int64),
		Slots: raw[6].(int64), Totals: make(map[Status]int64),
	}
	s.running = s.Running
	ring := parseRing(raw[4].([]any))
	now := raw[3].(int64)
	s.CompletedPerSec, s.AvgDuration = ring.window(now, RateWindow), ring.avg(now)
	s.Rate = startRate(e, s.CompletedPerSec, s.AvgDuration, s.Running, s.Queued)
	counts := raw[5].([]any)
	for i := 0; i+1 < len(counts); i += 2 {
		k, _ := counts[i].(string)
		v, _ := strconv.ParseInt(fmt.Sprint(counts[i+1]), 10, 64)
		switch k {
		case "slots_released":
			s.SlotsReleased = v
		case "slots_expired":
			s.SlotsExpired = v
		default:
			s.Totals[Status(k)] = v
		}
	}
	return s, nil
}

// ring is the per-second record of finished calls (lua/lib.lua record_call).
type ring map[int64][2]int64 // second -> {count, total duration ms}

func parseRing(flat []any) ring {
	r := make(ring, len(flat)/2)
	for i := 1; i < len(flat); i += 2 {
		v, _ := flat[i].(string)
		parts := strings.Split(v, ":")
		if len(parts) != 3 {
			continue
		}
		sec, _ := strconv.ParseInt(parts[0], 10, 64)
		cnt, _ := strconv.ParseInt(parts[1], 10, 64)
		dur, _ := strconv.ParseInt(parts[2], 10, 64)
		r[sec] = [2]int64{cnt, dur}
	}
	return r
}

// window returns the completions per second over the full seconds of the last w before nowMs.
// The first second that saw a completion is left out when the window does not start with it:
// an endpoint that just got busy started part way into it, and counting it as a whole second
// would understate the rate.
func (r ring) window(nowMs int64, w time.Duration) float64 {
	cur := nowMs / 1000
	from := cur - int64(w/time.Second)
	first := int64(-1)
	for s := from; s < cur; s++ {
		if r[s][0] > 0 {
			first = s
			break
		}
	}
	if first < 0 {
		return 0
	}
	if first > from && first < cur-1 {
		first++ // a partial second
	}
	var n int64
	for s := first; s < cur; s++ {
		n += r[s][0]
	}
	if n < 10 {
		return 0 // too few to tell a rate
	}
	return float64(n) / float64(cur-first)
}

// avg returns the mean call duration over the last minute (0 with fewer than 3 calls).
func (r ring) avg(nowMs int64) time.Duration {
	cur := nowMs / 1000
	var n, d int64
	for s, v := range r {
		if s > cur-60 && s <= cur {
			n += v[0]
			d += v[1]
		}
	}
	if n < 3 {
		return 0
	}
	return time.Duration(d/n) * time.Millisecond
}

// startRate is how many tasks per second the ETA assumes start. While the endpoint is busy (all
// slots taken and tasks waiting) the measured completion rate is the start rate: each end lets
// the next task start. Otherwise (or before there is data) it is what the limits allow:
// Concurrency / duration (measured, else AvgDuration), no more than QPS. 0: unknown.
func startRate(e Endpoint, completed float64, measured time.Duration, running, queued int64) float64 {
	if completed > 0 && running >= int64(e.Concurrency) && queued > 0 {
		if e.QPS > 0 {
			return math.Min(completed, e.QPS)
		}
		return completed
	}
	d := measured
	if d <= 0 {
		d = e.AvgDuration
	}
	rate := 0.0
	if d > 0 {
		rate = float64(e.Concurrency) / d.Seconds()
	}
	if e.QPS > 0 && (rate == 0 || rate > e.QPS) {
		rate = e.QPS
	}
	return rate
}

// etaFor estimates the wait of a task with ahead tasks in front: the tasks that free slots let
// start at once go now (one at a time under a rate limit), the rest at rate.
func etaFor(e Endpoint, rate float64, ahead, running int64) (time.Duration, bool) {
	free := max(0, int64(e.Concurrency)-running)
	if e.QPS > 0 {
		free = min(free, 1)
	}
	if ahead < free {
		return 0, true
	}
	if rate <= 0 {
		return 0, false
	}
	secs := float64(ahead+1-free) / rate
	return time.Duration(secs * float64(time.Second)), true
}

// estimateWait fills t's WaitTime from its place and the endpoint's numbers read with it.
func (c *Client) estimateWait(ctx context.Context, t *Task, running, queued, nowMs int64, r ring) {
	e, err := c.Endpoint(ctx, t.Endpoint)
	if err != nil {
		return // a deleted endpoint: its tasks will not start
	}
	rate := startRate(e, r.window(nowMs, RateWindow), r.avg(nowMs), running, queued)
	t.WaitTime, t.WaitKnown = etaFor(e, rate, t.WaitNum, running)
}
