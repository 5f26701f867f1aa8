package callback

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/queue"
)

// maxWakes bounds the lanes whose next work a deliverer keeps a timer for (laneVisits.wakes); the
// others wait for their due index entry, read every PollInterval.
const maxWakes = 1024

// laneVisits is what the fetch loop knows of callback lanes between its rounds.
type laneVisits struct {
	// hot are the lanes to visit now: due by the index, named by a notification, with jobs left
	// after a visit, or with their own next work come.
	hot map[queue.QueueRef]bool
	// wakes are when lanes this deliverer visited next have work (a delayed job, a lease end), so
	// it visits them on time without waiting for the index.
	wakes map[queue.QueueRef]time.Time
	// failing are the lanes whose visit failed, with the time of their next try: until then
	// neither notifications nor the index bring them back (their entry is deferred too).
	failing map[queue.QueueRef]time.Time
	// offset is Redis's clock minus the local one at the last read of the index, for the times
	// of deferred entries.
	offset time.Duration
}

// dueRead is one read of the due index, handed from the poller to the fetch loop.
type dueRead struct {
	lanes  []queue.QueueRef
	offset time.Duration // Redis's clock minus the local one
}

// fetchLoop leases callback jobs while workers are free, from the lanes with work: those the due
// index has due (read by pollDue), those named by notifications (at once), those with jobs left
// after a visit, and those whose next work, learnt at their last visit, has come. It never looks
// at a lane with nothing due: its cost follows the callback work, not the number of lanes.
func (d *Deliverer) fetchLoop(ctx context.Context, due <-chan dueRead, jobs chan<- callbackWork) {
	lv := &laneVisits{
		hot:     map[queue.QueueRef]bool{},
		wakes:   map[queue.QueueRef]time.Time{},
		failing: map[queue.QueueRef]time.Time{},
	}
	for ctx.Err() == nil {
		now := time.Now()
		d.drainNotes(lv, due)
		for r, at := range lv.wakes {
			if !now.Before(at) {
				lv.hot[r] = true
				delete(lv.wakes, r)
			}
		}
		full := d.visitHot(ctx, lv, jobs)
		if len(lv.hot) > 0 && !full {
			continue // lanes with more work and room to take it
		}
		var wake <-chan time.Time
		var next time.Time
		for _, at := range lv.wakes {
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.NewTimer(max(time.Until(next), 0))
			wake = timer.C
		}
		var freed <-chan struct{}
		if full {
			freed = d.freed
		}
		select {
		case <-ctx.Done():
		case r := <-d.notes:
			lv.note(r, time.Now())
		case read := <-due:
			lv.apply(read, time.Now())
		case <-freed:
		case <-wake:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// pollDue reads the lanes the due index has due (at most Batch of each shard) and hands them to
// the fetch loop, until ctx ends; while a sweep of the callback registry is under way or may be
// needed, each read takes its next step. It runs beside the fetch loop, so a slow read never holds
// up the lanes already known. Reads are PollInterval apart, or ten times as long as the last one
// took when that is longer: a Cluster's index has a shard per hash slot, and reading all 16,384
// costs far more than a standalone server's one key, so polling takes at most a tenth of the
// time whatever it costs.
func (d *Deliverer) pollDue(ctx context.Context, out chan<- dueRead) {
	var sweep registrySweep
	for ctx.Err() == nil {
		start := time.Now()
		read, err := d.cfg.Queue.DueCallbackLanes(ctx, d.cfg.Batch)
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("callback deliverer: read the callback lanes' due index", "error", err)
		}
		if err == nil && len(read.Lanes) > 0 {
			select {
			case out <- dueRead{lanes: read.Lanes, offset: read.Now.Sub(start)}:
			case <-ctx.Done():
				return
			}
		}
		d.sweepStep(ctx, &sweep, start)
		select {
		case <-ctx.Done():
		case <-time.After(max(d.cfg.PollInterval, 10*time.Since(start))):
		}
	}
}

// registrySweep is where a deliverer's sweep of the callback registry stands.
type registrySweep struct {
	cursor uint64    // 0: at the start, or complete
	next   time.Time // when a sweep from the start is looked at again
}

// sweepStep takes the next step of the sweep of the callback registry, when one is under way or
// due to be looked at: a completed sweep (by any deliverer) is looked at again within a minute.
func (d *Deliverer) sweepStep(ctx context.Context, sw *registrySweep, now time.Time) {
	if sw.cursor == 0 && now.Before(sw.next) {
		return
	}
	next, _, err := d.cfg.Queue.SweepCallbackLanes(ctx, sw.cursor, d.cfg.Batch, d.cfg.SweepEvery)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			d.cfg.Logger.Warn("callback deliverer: sweep the callback registry", "error", err)
		}
	case next == 0:
		sw.cursor, sw.next = 0, now.Add(min(d.cfg.SweepEvery, time.Minute))
	default:
		sw.cursor = next
	}
}

// apply makes the lanes of a read of the due index hot.
func (lv *laneVisits) apply(read dueRead, now time.Time) {
	lv.offset = read.offset
	for _, r := range read.lanes {
		lv.note(r, now)
	}
}

// note makes lane r hot unless it is failing and its next try has not come.
func (lv *laneVisits) note(r queue.QueueRef, now time.Time) {
	if at, ok := lv.failing[r]; ok {
		if now.Before(at) {
			return
		}
		delete(lv.failing, r)
	}
	lv.hot[r] = true
}

// drainNotes takes the notifications and the read of the due index waiting, without blocking.
func (d *Deliverer) drainNotes(lv *laneVisits, due <-chan dueRead) {
	now := time.Now()
	for {
		select {
		case r := <-d.notes:
			lv.note(r, now)
		case read := <-due:
			lv.apply(read, now)
		default:
			return
		}
	}
}

// visitHot leases jobs of the hot lanes for the free workers, one script call per lane, and
// reports whether the workers are full: with most of them busy it leases again only once a
// quarter of them are free, as leasing for every call that ends would cost a script call per job
// when a backlog drains.
func (d *Deliverer) visitHot(ctx context.Context, lv *laneVisits, jobs chan<- callbackWork) bool {
	minLease := max(1, cap(d.slots)/4)
	for r := range lv.hot {
		free := cap(d.slots) - len(d.slots)
		if free < minLease {
			return true
		}
		delete(lv.hot, r)
		d.visits.Add(1)
		b, err := d.cfg.Queue.ConsumeCallbacks(ctx, r.Namespace, r.Queue, free)
		if err != nil {
			if ctx.Err() == nil {
				d.laneFailed(ctx, lv, r, err)
			}
			continue
		}
		d.backoff.Succeeded(r)
		received := time.Now()
		for _, j := range b.Jobs {
			d.slots <- struct{}{}
			jobs <- callbackWork{job: j, received: received}
		}
		if b.More {
			lv.hot[r] = true
		}
		if b.Wake > 0 && len(lv.wakes) < maxWakes {
			at := received.Add(b.Wake)
			if old, ok := lv.wakes[r]; !ok || at.Before(old) {
				lv.wakes[r] = at
			}
		}
	}
	return false
}

// laneFailed isolates a lane whose visit failed: it is logged and tried again after its backoff
// (duework.Backoff: 1s doubling to 1 min), its entry in the due index moved to then, so it stands
// in front of no other lane meanwhile.
func (d *Deliverer) laneFailed(ctx context.Context, lv *laneVisits, r queue.QueueRef, err error) {
	d.laneFailures.Add(1)
	count, retryIn := d.backoff.Failed(r)
	now := time.Now()
	if len(lv.failing) >= maxWakes {
		clear(lv.failing)
	}
	lv.failing[r] = now.Add(retryIn)
	delete(lv.wakes, r)
	attrs := []any{slog.String("namespace", r.Namespace), slog.String("queue", r.Queue),
		slog.Int("failures", count), slog.Duration("retry_in", retryIn), slog.Any("error", err)}
	if derr := d.cfg.Queue.DeferCallbackLane(ctx, r, now.Add(lv.offset+retryIn)); derr != nil {
		attrs = append(attrs, slog.Any("defer_error", derr))
	}
	d.cfg.Logger.Warn("callback lane failed", attrs...)
}

// laneBackoff is the backoff of lanes whose visit fails.
type laneBackoff = duework.Backoff[queue.QueueRef]
