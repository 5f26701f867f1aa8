package relay

import (
	"context"
	"fmt"
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
	// Rate is the start rate the ETA assumes (tasks per second): the concurrency slots' rate, no
	// more than the QPS as dispatchers space calls; 0 when it cannot tell.
	Rate float64
	// Totals counts the tasks that ended, by status, over the endpoint's life.
	Totals map[Status]int64

	limits limits
}

// ETA estimates how long a task with ahead tasks in front of it waits before it starts, from the
// state read by Stats; false when it cannot tell (no measured calls, no AvgDuration and no QPS).
func (s EndpointStats) ETA(ahead int64) (time.Duration, bool) {
	return s.limits.eta(s.Endpoint, ahead)
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
	ring := parseRing(raw[4].([]any))
	now := raw[3].(int64)
	s.CompletedPerSec, s.AvgDuration = ring.window(now, RateWindow), ring.avg(now)
	s.Rate = startRate(e, s.CompletedPerSec, s.AvgDuration, s.Running, s.Queued)
	s.limits = limits{running: s.Running, rate: concurrencyRate(e, s.CompletedPerSec, s.AvgDuration, s.Running, s.Queued),
		nextToken: nextTokenIn(raw[7], now)}
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

// concurrencyRate is how many tasks per second the concurrency slots let start: while the
// endpoint is busy (all slots taken and tasks waiting) the measured completion rate, as each end
// lets the next task start; otherwise (or before there is data) Concurrency / duration (measured,
// else AvgDuration). 0: unknown.
func concurrencyRate(e Endpoint, completed float64, measured time.Duration, running, queued int64) float64 {
	if completed > 0 && running >= int64(e.Concurrency) && queued > 0 {
		return completed
	}
	d := measured
	if d <= 0 {
		d = e.AvgDuration
	}
	if d <= 0 {
		return 0
	}
	return float64(e.Concurrency) / d.Seconds()
}

// startRate is how many tasks per second the ETA assumes start: the concurrency slots' rate, no
// more than the rate limit as dispatchers space calls. 0: unknown.
func startRate(e Endpoint, completed float64, measured time.Duration, running, queued int64) float64 {
	rate := concurrencyRate(e, completed, measured, running, queued)
	if e.QPS > 0 && (rate == 0 || rate > spacedQPS(e)) {
		rate = spacedQPS(e)
	}
	return rate
}

// limits is what an ETA needs to know of an endpoint's state, read in one script call.
type limits struct {
	running int64
	// rate is the concurrency slots' start rate (concurrencyRate).
	rate float64
	// nextToken is how long until the rate limit's next token is due (negative: it is overdue,
	// and the next task can start at once).
	nextToken time.Duration
}

// eta estimates the wait of a task with ahead tasks in front. Each limit gives the earliest start
// it allows, and the task starts when both do:
//   - the concurrency slots: the tasks that free slots let start go now, the rest at l.rate;
//   - the rate limit (QPS): the next token is due in l.nextToken, and each task ahead takes the
//     one after, 1/QPS apart as dispatchers space calls (spacedQPS). Counting from the next
//     token, not from now, is what keeps the ETA right while the rate binds: the token of the
//     task that started last is spent.
//
// false when the wait cannot be told: tasks ahead wait for slots, and neither a duration (measured
// or AvgDuration) nor a QPS says how fast they free.
func (l limits) eta(e Endpoint, ahead int64) (time.Duration, bool) {
	var wait time.Duration
	known := true
	if free := max(0, int64(e.Concurrency)-l.running); ahead >= free {
		if l.rate > 0 {
			wait = time.Duration(float64(ahead+1-free) / l.rate * float64(time.Second))
		} else {
			known = false
		}
	}
	if e.QPS > 0 {
		interval := time.Duration(float64(time.Second) / spacedQPS(e))
		// A burst lets a few tokens be taken at once: the first is then up to burst - 1 intervals
		// behind now (take.lua: rate_tokens).
		first := max(l.nextToken, -time.Duration(e.burst()-1)*interval)
		wait, known = max(wait, first+time.Duration(ahead)*interval), true
	}
	return max(wait, 0), known
}

// nextTokenIn reads the rate limit's next token time (a float of ms, or nil when there is none)
// as the time from nowMs until it is due.
func nextTokenIn(v any, nowMs int64) time.Duration {
	s, _ := v.(string)
	tat, err := strconv.ParseFloat(s, 64)
	if err != nil || tat <= 0 {
		return 0
	}
	return time.Duration((tat - float64(nowMs)) * float64(time.Millisecond))
}

// estimateWait fills t's WaitTime from its place and the endpoint's numbers read with it.
func (c *Client) estimateWait(ctx context.Context, t *Task, running, queued, nowMs int64, r ring, tat any) {
	e, err := c.Endpoint(ctx, t.Endpoint)
	if err != nil {
		return // a deleted endpoint: its tasks will not start
	}
	l := limits{running: running, rate: concurrencyRate(e, r.window(nowMs, RateWindow), r.avg(nowMs), running, queued),
		nextToken: nextTokenIn(tat, nowMs)}
	t.WaitTime, t.WaitKnown = l.eta(e, t.WaitNum)
}
