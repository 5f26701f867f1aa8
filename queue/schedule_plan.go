package queue

import "time"

// Bounds of what one visit of a schedule fires.
const (
	// MaxCatchUp is the most missed ticks a schedule with CatchUpAll fires after an outage: the
	// newest ones; older ones are counted missed.
	MaxCatchUp = 1000
	// maxFiresPerCall is the most jobs one fire call publishes for one schedule; a schedule with
	// more due ticks is due again at once and the next pass goes on.
	maxFiresPerCall = 100
	// maxMissedScan is the most missed ticks counted one by one; past it the count stops there and
	// the schedule jumps to its first tick within the grace period.
	maxMissedScan = 100_000
)

// tickPlan is what to do with one due schedule: the ticks to fire, the ticks counted missed and
// the next run after them (zero: none).
type tickPlan struct {
	fire   []time.Time
	missed int64
	next   time.Time
}

// planTicks decides the ticks of a schedule whose next run from is due by horizon (now, or a
// lookahead after it). Ticks up to horizon late by at most grace are on time and fire (those after
// now are fired ahead, due at their tick); older ones were missed (every scheduler was down, or the
// schedule could not be visited) and the catch-up policy decides: skip fires none of them, one
// fires the newest of them, all fires up to MaxCatchUp newest. Those not fired are counted missed.
func planTicks(r scheduleRule, from, now, horizon time.Time, policy CatchUp, grace time.Duration) tickPlan {
	var old, recent []time.Time
	var oldCount int64
	t := from
	for !t.IsZero() && !t.After(horizon) {
		if now.Sub(t) > grace {
			oldCount++
			old = append(old, t)
			if len(old) >= 2*MaxCatchUp {
				old = append(old[:0], old[len(old)-MaxCatchUp:]...)
			}
			if oldCount >= maxMissedScan {
				t = r.next(now.Add(-grace - time.Nanosecond))
				continue
			}
		} else {
			recent = append(recent, t)
			if len(recent) >= maxFiresPerCall {
				t = r.next(t)
				break
			}
		}
		t = r.next(t)
	}
	p := tickPlan{next: t}
	switch {
	case oldCount == 0:
	case policy == CatchUpSkip:
		p.missed = oldCount
	case policy == CatchUpOne:
		p.fire = append(p.fire, old[len(old)-1])
		p.missed = oldCount - 1
	default:
		if len(old) > MaxCatchUp {
			old = old[len(old)-MaxCatchUp:]
		}
		p.fire = append(p.fire, old...)
		p.missed = oldCount - int64(len(old))
	}
	p.fire = append(p.fire, recent...)
	if len(p.fire) > maxFiresPerCall {
		p.fire = p.fire[:maxFiresPerCall]
		p.next = r.next(p.fire[len(p.fire)-1])
	}
	return p
}
