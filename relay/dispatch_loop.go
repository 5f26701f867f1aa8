package relay

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sluicehq/sluice/internal/notify"
	"github.com/sluicehq/sluice/internal/outbound"
)

// loop decides when to ask Redis for each endpoint's next tasks: at once after a full batch, at
// the time the rate limit or a retry names, on a wake-up (a task submitted to an empty queue, a
// slot freed; every endpoint when the subscription came back after a lost connection), when a
// worker frees up, and for an endpoint with nothing to take at least every WakeupInterval. It
// returns when stop is closed or ctx ends.
func (d *Dispatcher) loop(ctx context.Context, stop <-chan struct{}, w *notify.Waiter, jobs chan<- dispatchJob) {
	due := make(map[string]time.Time)
	needWorkers := make(map[string]bool) // endpoints whose next task waits for a free worker
	var version int64                    // of the endpoint settings last seen
	resubscribed := w.Resubscribed()     // wake-ups may have been lost when this changes
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		default:
		}
		changed := d.c.eps.changedC() // before the read: a change after it wakes the loop
		snap, err := d.c.endpoints(ctx)
		if err != nil {
			d.log.Warn("relay: dispatcher: read endpoints", slog.Any("error", err))
		}
		now := time.Now()
		next := now.Add(d.cfg.PollInterval)
		// Wake at least as often as settings are refreshed, so a change applies within it.
		wakeBy := now.Add(d.c.cfg.RefreshInterval)
		waitWorkers := false
		woken := d.takeWakes()
		var eps []Endpoint
		if snap != nil {
			eps = snap.list
			if snap.version != version {
				// New settings (a higher concurrency or rate) may let tasks start now.
				version = snap.version
				clear(due)
			}
		}
		if r := w.Resubscribed(); r != resubscribed {
			resubscribed = r
			clear(due)
		}
		seen := make(map[string]bool, len(eps))
		for _, e := range eps {
			if len(d.cfg.Endpoints) > 0 && !slices.Contains(d.cfg.Endpoints, e.Name) {
				continue
			}
			seen[e.Name] = true
			at, ok := due[e.Name]
			if !ok || woken[e.Name] {
				at = now
			}
			if at.After(now) {
				next = minTime(next, at)
				due[e.Name] = at
				continue
			}
			// An endpoint whose next task needs a worker waits for a few to be free rather than
			// take a handful of tasks per script call: under load that keeps batches large. Other
			// endpoints go on: their online tasks need no worker.
			free := int64(d.cfg.Workers) - d.inflight.Load()
			if needWorkers[e.Name] && free < d.minTake() {
				waitWorkers = true
				due[e.Name] = now
				continue
			}
			var blocked bool
			// Ask for no more tasks than there are workers (those popped beyond it that are offline
			// would go back), but for some even with none free: online tasks need no worker.
			n := min(int64(d.cfg.Batch), max(free, d.minTake()))
			at, blocked = d.dispatch(ctx, e, int(n), int(max(free, 0)), jobs, now)
			if blocked {
				needWorkers[e.Name] = true
				waitWorkers = true
			} else {
				delete(needWorkers, e.Name)
			}
			due[e.Name] = at
			next = minTime(next, at)
		}
		for name := range due {
			if !seen[name] {
				delete(due, name)
				delete(needWorkers, name)
			}
		}
		if !next.After(time.Now()) {
			continue
		}
		timer.Reset(time.Until(minTime(next, wakeBy)))
		var freed <-chan struct{}
		if waitWorkers {
			freed = d.freed
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-w.C:
		case <-changed:
		case <-freed:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// minTake is the fewest free workers worth a dispatch call: a quarter of a batch.
func (d *Dispatcher) minTake() int64 {
	return max(1, int64(min(d.cfg.Batch, d.cfg.Workers))/4)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// dispatch takes up to n tasks of e, at most free of them offline, and hands the offline ones to
// the workers; it returns when to ask again, and whether the next task waits for a worker.
func (d *Dispatcher) dispatch(ctx context.Context, e Endpoint, n, free int, jobs chan<- dispatchJob, now time.Time) (time.Time, bool) {
	br := d.breakers.Get(e.Name)
	if st := br.Status(); st.State != outbound.Closed {
		if st.State == outbound.Open && now.Before(st.OpenUntil) {
			d.stats.held.Add(1)
			return st.OpenUntil, false
		}
		// A probe: only when a task waits, so the probe slot is not spent on an empty queue.
		queued, err := d.c.rdb.ZCard(ctx, d.c.keys.get(e.Name).all[0]).Result()
		if err != nil || queued == 0 {
			return now.Add(min(d.cfg.PollInterval, 100*time.Millisecond)), false
		}
		if free == 0 {
			return now, true
		}
		if !br.Allow() {
			d.stats.held.Add(1)
			return now.Add(100 * time.Millisecond), false
		}
		n, free = 1, 1
	}
	hint, taken, err := d.c.take(ctx, e, n, free, &d.clock)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("relay: dispatch", slog.String("endpoint", e.Name), slog.Any("error", err))
		}
		return now.Add(d.cfg.PollInterval), false
	}
	for _, j := range taken {
		d.inflight.Add(1)
		d.stats.taken.Add(1)
		jobs <- j
	}
	switch {
	case hint == -2:
		return now, true
	case hint == 0:
		return now, false
	case hint > 0:
		return now.Add(time.Duration(hint) * time.Millisecond), false
	default: // nothing to take until a wake-up says so
		return now.Add(jittered(d.cfg.WakeupInterval)), false
	}
}

// jittered returns a duration between three quarters of d and d, so that endpoints found idle
// together are not all asked again together.
func jittered(d time.Duration) time.Duration {
	return d - rand.N(d/4+1)
}
