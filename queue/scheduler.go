package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/queue/internal/store"
)

// SchedulerConfig configures a Scheduler.
type SchedulerConfig struct {
	// Grace is how late a tick may fire and still count as on time; an older tick was missed and
	// its schedule's CatchUp policy decides what happens to it. Default 10s.
	Grace time.Duration
	// MaxIdle is the longest wait between two looks at the due index when nothing is due sooner;
	// a schedule created meanwhile with an earlier first tick is seen at the next look. Default 1s.
	MaxIdle time.Duration
	// ClaimLease is how long a scheduler holds a queue's due schedules while it fires them: the
	// other schedulers leave that queue alone for as long, and take it over after that if this one
	// died. Default 5s.
	ClaimLease time.Duration
	// Batch is the most queues one look claims (spread over the shards of the due index), and the
	// most due schedules of a queue read at once. Default 64.
	Batch int
	// Lookahead is how far ahead of its tick a job is published: a tick due within it is fired
	// already, as a delayed job due at the tick (a consumer gets it at the tick, not when the
	// scheduler gets round to it), so the work of many schedules ticking on the same second is
	// spread over the time before it. A schedule paused, changed or deleted less than Lookahead
	// before a tick may still run that tick's job. Default 1s; negative: none (jobs are
	// published at their tick or after).
	Lookahead time.Duration
	// OnFire, when set, is called after each schedule's fire (for metrics); it must not block.
	OnFire func(FireEvent)
	// Logger receives pass errors. Default: the client's logger.
	Logger *slog.Logger
}

// FireEvent is one fire of a schedule: the jobs of its due ticks published, or its missed ticks
// counted.
type FireEvent struct {
	Namespace, Queue, Schedule string
	// Jobs is the number of jobs published; Missed the ticks counted missed.
	Jobs, Missed int
	// Lateness is how long after its tick the oldest job published was due, by Redis's clock: 0
	// when it was published ahead of its tick (SchedulerConfig.Lookahead), due at it.
	Lateness time.Duration
}

// SchedulerStats count what a Scheduler did since it was created.
type SchedulerStats struct {
	Fires  int64 // jobs published
	Missed int64 // ticks counted missed
	Passes int64 // looks at the due index
	Errors int64 // failed passes or queue visits
}

// Scheduler publishes the jobs of due schedules. Any number of processes run one on the same
// Redis, with no leader: each tick is published by exactly one script call, keyed by the
// schedule and the tick, that also advances the schedule (schedule_fire.lua), so schedulers that
// race for a tick, or one killed at any instant, neither lose nor duplicate it. Work follows what
// is due: a look claims only queues whose schedules are due, from a due index kept by the scripts.
type Scheduler struct {
	startstop.Base

	client *Client
	cfg    SchedulerConfig
	stats  struct{ fires, missed, passes, errors atomic.Int64 }
	// between, in tests, runs between the script calls of a visit (after "claim", "due" and
	// "fire"), to stop a scheduler there.
	between func(ctx context.Context, step string)
	// passMu makes passes one at a time (RunOnce may be called beside the loop); it guards specs,
	// the cache of parsed definitions (plan).
	passMu sync.Mutex
	specs  map[string]parsedSpec
}

var _ startstop.Service = (*Scheduler)(nil)

// NewScheduler returns a stopped Scheduler for the client's schedules.
func NewScheduler(client *Client, cfg SchedulerConfig) *Scheduler {
	cfg.Grace = cmp.Or(cfg.Grace, 10*time.Second)
	cfg.MaxIdle = cmp.Or(cfg.MaxIdle, time.Second)
	cfg.ClaimLease = cmp.Or(cfg.ClaimLease, 5*time.Second)
	cfg.Batch = cmp.Or(cfg.Batch, 64)
	cfg.Lookahead = max(cmp.Or(cfg.Lookahead, time.Second), 0)
	if cfg.Logger == nil {
		cfg.Logger = client.cfg.Logger
	}
	return &Scheduler{client: client, cfg: cfg, specs: map[string]parsedSpec{}}
}

// Start runs passes until ctx ends or Stop is called, which waits for the pass under way. Between
// passes it sleeps until the earliest due queue in the index (MaxIdle at most).
func (s *Scheduler) Start(ctx context.Context) error {
	return s.Run(ctx, s.loop)
}

func (s *Scheduler) loop(ctx context.Context) {
	for ctx.Err() == nil {
		wait, err := s.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			s.stats.errors.Add(1)
			s.cfg.Logger.Warn("schedule pass failed", slog.Any("error", err))
			wait = s.cfg.MaxIdle
		}
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(min(wait, s.cfg.MaxIdle))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() SchedulerStats {
	return SchedulerStats{Fires: s.stats.fires.Load(), Missed: s.stats.missed.Load(),
		Passes: s.stats.passes.Load(), Errors: s.stats.errors.Load()}
}

func (s *Scheduler) step(ctx context.Context, name string) {
	if s.between != nil {
		s.between(ctx, name)
	}
}

// RunOnce claims the queues with due schedules, fires their due ticks and settles the due index;
// it returns how long until the next due time it knows of (0: more is due now). Each step is one
// pipelined round trip for every claimed queue: the claim, the read of their due schedules, the
// fire calls, the settle. A queue that fails is logged and left to its claim's lease; the others
// go on.
func (s *Scheduler) RunOnce(ctx context.Context) (time.Duration, error) {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	s.stats.passes.Add(1)
	// Each shard gives up to Batch/shards queues a look, so that other schedulers claim the rest
	// and work on them meanwhile.
	claim, err := s.client.store.ClaimDueQueues(ctx, max(1, s.cfg.Batch/store.DueShards), s.cfg.ClaimLease, s.cfg.Lookahead)
	if err != nil {
		return 0, fmt.Errorf("queue: claim due schedules: %w", err)
	}
	claimed := time.Now() // the wait below counts from Redis's time at the claim, less the pass
	s.step(ctx, "claim")
	next := claim.NextMs
	if len(claim.Queues) > 0 {
		var visited []store.DueQueue
		var nextRuns []int64
		if visited, nextRuns, err = s.visit(ctx, claim.Queues); err != nil {
			return 0, err
		}
		if err := s.client.store.SettleQueues(ctx, visited, nextRuns); err != nil {
			return 0, fmt.Errorf("queue: settle due schedules: %w", err)
		}
		for _, n := range nextRuns {
			if n != store.NoRun && (next == store.NoRun || n < next) {
				next = n
			}
		}
	}
	if next == store.NoRun {
		return s.cfg.MaxIdle, nil
	}
	return time.Duration(next-claim.NowMs)*time.Millisecond - s.cfg.Lookahead - time.Since(claimed), nil
}

// visit fires the due ticks of the claimed queues' schedules and returns the queues it is done
// with and the earliest next run of each (store.NoRun: none).
func (s *Scheduler) visit(ctx context.Context, queues []store.DueQueue) ([]store.DueQueue, []int64, error) {
	reads, err := s.client.store.DueSchedules(ctx, queues, s.cfg.Batch, s.cfg.Lookahead)
	if err != nil {
		return nil, nil, fmt.Errorf("queue: read due schedules: %w", err)
	}
	s.step(ctx, "due")
	visited := make([]store.DueQueue, 0, len(queues))
	nextRuns := make([]int64, 0, len(queues))
	var batches []store.FireBatch
	var batchQueue []store.DueQueue
	for i, r := range reads {
		dq := queues[i]
		if r.Err == nil && len(r.Due) > 0 {
			var fires []store.ScheduleFire
			fires, r.Err = s.planQueue(ctx, dq, r)
			if len(fires) > 0 && r.Err == nil {
				batches = append(batches, store.FireBatch{Namespace: dq.Namespace, Queue: dq.Queue, Fires: fires})
				batchQueue = append(batchQueue, dq)
				continue
			}
			r.NextMs = r.NowMs + s.cfg.ClaimLease.Milliseconds() // none could be planned: look again later
		}
		if r.Err != nil {
			s.failed(dq, r.Err)
			continue
		}
		visited, nextRuns = append(visited, dq), append(nextRuns, r.NextMs)
	}
	if len(batches) == 0 {
		return visited, nextRuns, nil
	}
	results, err := s.client.store.FireSchedules(ctx, batches)
	if err != nil {
		return nil, nil, fmt.Errorf("queue: fire schedules: %w", err)
	}
	s.step(ctx, "fire")
	for j, res := range results {
		if res.Err != nil {
			s.failed(batchQueue[j], res.Err)
			continue
		}
		s.fired(batchQueue[j], batches[j].Fires, res)
		visited, nextRuns = append(visited, batchQueue[j]), append(nextRuns, res.NextMs)
	}
	return visited, nextRuns, nil
}

// failed logs a queue whose visit failed; its claim's lease brings it back. A visit cut short
// because the scheduler is stopping is not a failure: the next scheduler picks the queue up.
func (s *Scheduler) failed(dq store.DueQueue, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	s.stats.errors.Add(1)
	s.cfg.Logger.Warn("schedule visit failed", slog.String("namespace", dq.Namespace),
		slog.String("queue", dq.Queue), slog.Any("error", err))
}

// fired counts a fire call's outcome and reports it to OnFire.
func (s *Scheduler) fired(dq store.DueQueue, fires []store.ScheduleFire, res store.FireResult) {
	for i, out := range res.Outcomes {
		if out.Published < 0 {
			continue
		}
		f := fires[i]
		if out.Published > 0 {
			s.client.usage.add(dq.Namespace, out.Published, out.Published*storedBytes(f.Jobs[0].Job.Payload))
		}
		s.stats.fires.Add(out.Published)
		s.stats.missed.Add(f.Missed)
		if s.cfg.OnFire != nil && (len(f.Jobs) > 0 || f.Missed > 0) {
			ev := FireEvent{Namespace: dq.Namespace, Queue: dq.Queue, Schedule: f.Name,
				Jobs: int(out.Published), Missed: int(f.Missed)}
			if len(f.Jobs) > 0 {
				ev.Lateness = max(time.Duration(res.NowMs-f.Jobs[0].TickMs)*time.Millisecond, 0)
			}
			s.cfg.OnFire(ev)
		}
	}
}

// planQueue plans the due schedules of one queue (plan) and registers the queue for the jobs
// they publish. A schedule that cannot be planned is logged and skipped.
func (s *Scheduler) planQueue(ctx context.Context, dq store.DueQueue, r store.DueRead) ([]store.ScheduleFire, error) {
	now := time.UnixMilli(r.NowMs)
	fires := make([]store.ScheduleFire, 0, len(r.Due))
	callbacks := false
	for _, rec := range r.Due {
		f, cb, err := s.plan(dq.Namespace, rec, now)
		if err != nil {
			s.stats.errors.Add(1)
			s.cfg.Logger.Warn("schedule skipped", slog.String("namespace", dq.Namespace),
				slog.String("schedule", rec.Name), slog.Any("error", err))
			continue
		}
		callbacks = callbacks || cb
		fires = append(fires, f)
	}
	if len(fires) == 0 {
		return nil, nil
	}
	if err := s.withinStorage(ctx, dq, fires); err != nil {
		return nil, err
	}
	return fires, s.client.register(ctx, dq.Namespace, dq.Queue, callbacks)
}

// withinStorage holds the ticks of one queue's fires to the namespace's storage quota: when their
// jobs would take the namespace past it, none of them is published and they are counted missed
// (the schedules advance), as a publish past the quota is refused. So schedules cannot store more
// jobs than the namespace's publishes may.
func (s *Scheduler) withinStorage(ctx context.Context, dq store.DueQueue, fires []store.ScheduleFire) error {
	var jobs, bytes int64
	for _, f := range fires {
		for _, j := range f.Jobs {
			jobs, bytes = jobs+1, bytes+storedBytes(j.Job.Payload)
		}
	}
	if jobs == 0 {
		return nil
	}
	err := s.client.checkStorage(ctx, dq.Namespace, jobs, bytes)
	if !errors.Is(err, sluice.ErrQuotaExceeded) {
		return err
	}
	s.cfg.Logger.Warn("schedule ticks counted missed: the namespace is at its storage quota",
		slog.String("namespace", dq.Namespace), slog.String("queue", dq.Queue), slog.Int64("ticks", jobs),
		slog.Any("error", err))
	for i := range fires {
		fires[i].Missed += int64(len(fires[i].Jobs))
		fires[i].Jobs = nil
	}
	return nil
}

// maxCachedSpecs bounds a scheduler's cache of parsed definitions; past it the cache starts over.
const maxCachedSpecs = 16384

// parsedSpec is a definition as plan needs it, parsed once.
type parsedSpec struct {
	spec scheduleSpec
	rule scheduleRule
	err  error
}

// plan decides what to fire of one due schedule (planTicks) and builds the jobs of its ticks;
// it reports whether they carry a callback. Parsed definitions are cached by their text: a
// schedule's definition only changes with a new version, which is a new text.
func (s *Scheduler) plan(ns string, rec store.ScheduleRecord, now time.Time) (store.ScheduleFire, bool, error) {
	ps, ok := s.specs[rec.Spec]
	if !ok {
		if len(s.specs) >= maxCachedSpecs {
			clear(s.specs)
		}
		ps.spec, ps.rule, ps.err = parseSpec(rec.Spec)
		s.specs[rec.Spec] = ps
	}
	if ps.err != nil {
		return store.ScheduleFire{}, false, ps.err
	}
	p := ps.spec.params(ns, rec.Name, rec.Queue)
	plan := planTicks(ps.rule, time.UnixMilli(rec.NextRun), now, now.Add(s.cfg.Lookahead), p.CatchUp, s.cfg.Grace)
	f := store.ScheduleFire{Name: rec.Name, Version: rec.Version, FromMs: rec.NextRun,
		NextRunMs: runMs(plan.next), Missed: plan.missed, Jobs: make([]store.TickJob, 0, len(plan.fire))}
	for _, tick := range plan.fire {
		job, err := s.client.validateJob(p.Job.publishParams(ns, rec.Name, tick, false))
		if err != nil {
			return store.ScheduleFire{}, false, err
		}
		due := tick
		if p.Jitter > 0 {
			due = due.Add(time.Duration(rand.Int64N(int64(p.Jitter))))
		}
		dueAt(&job, due.UnixMilli(), now.UnixMilli())
		f.Jobs = append(f.Jobs, store.TickJob{TickMs: tick.UnixMilli(), Job: &job})
	}
	return f, p.Job.Callback != nil, nil
}

// dueAt makes a tick's job due at dueMs when that is after nowMs (a tick fired ahead, or a
// jitter): it is published as a delayed job, and its ttl and unique window are lengthened by how
// early it is published, so that they count from when it is due, as for a job fired at its tick.
// A job due by now is published ready.
func dueAt(job *store.NewJob, dueMs, nowMs int64) {
	lead := dueMs - nowMs
	if lead <= 0 {
		return
	}
	job.DelayMs, job.RunAtMs = 0, dueMs
	if job.TTLMs > 0 {
		job.TTLMs += lead
	}
	job.UniqueForMs += lead
}
