package queue

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

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
	// Batch is the most queues one look claims from each shard of the due index, and the most due
	// schedules of a queue read at once. Default 64.
	Batch int
	// OnFire, when set, is called after each tick fired (for metrics); it must not block.
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
	// Lateness is how long after its tick the oldest job published was, by Redis's clock.
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
}

var _ startstop.Service = (*Scheduler)(nil)

// NewScheduler returns a stopped Scheduler for the client's schedules.
func NewScheduler(client *Client, cfg SchedulerConfig) *Scheduler {
	cfg.Grace = cmp.Or(cfg.Grace, 10*time.Second)
	cfg.MaxIdle = cmp.Or(cfg.MaxIdle, time.Second)
	cfg.ClaimLease = cmp.Or(cfg.ClaimLease, 5*time.Second)
	cfg.Batch = cmp.Or(cfg.Batch, 64)
	if cfg.Logger == nil {
		cfg.Logger = client.cfg.Logger
	}
	return &Scheduler{client: client, cfg: cfg}
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
// it returns how long until the next due time it knows of (0: more is due now). A queue that
// fails is logged and left to its claim's lease; the others go on.
func (s *Scheduler) RunOnce(ctx context.Context) (time.Duration, error) {
	s.stats.passes.Add(1)
	claim, err := s.client.store.ClaimDueQueues(ctx, s.cfg.Batch, s.cfg.ClaimLease)
	if err != nil {
		return 0, fmt.Errorf("queue: claim due schedules: %w", err)
	}
	s.step(ctx, "claim")
	next := claim.NextMs
	visited := make([]store.DueQueue, 0, len(claim.Queues))
	nextRuns := make([]int64, 0, len(claim.Queues))
	for _, dq := range claim.Queues {
		if ctx.Err() != nil {
			break
		}
		n, err := s.visit(ctx, dq)
		if err != nil && ctx.Err() != nil {
			break
		}
		if err != nil {
			s.stats.errors.Add(1)
			s.cfg.Logger.Warn("schedule visit failed", slog.String("namespace", dq.Namespace),
				slog.String("queue", dq.Queue), slog.Any("error", err))
			continue
		}
		visited = append(visited, dq)
		nextRuns = append(nextRuns, n)
		if n != store.NoRun && (next == store.NoRun || n < next) {
			next = n
		}
	}
	if len(visited) > 0 {
		if err := s.client.store.SettleQueues(ctx, visited, nextRuns); err != nil {
			return 0, fmt.Errorf("queue: settle due schedules: %w", err)
		}
	}
	if next == store.NoRun {
		return s.cfg.MaxIdle, nil
	}
	return time.Duration(next-claim.NowMs) * time.Millisecond, nil
}

// visit fires the due ticks of one claimed queue's schedules and returns the queue's earliest
// next run (store.NoRun: none).
func (s *Scheduler) visit(ctx context.Context, dq store.DueQueue) (int64, error) {
	recs, nowMs, nextMs, err := s.client.store.DueSchedules(ctx, dq.Namespace, dq.Queue, s.cfg.Batch)
	if err != nil {
		return 0, err
	}
	s.step(ctx, "due")
	if len(recs) == 0 {
		return nextMs, nil
	}
	now := time.UnixMilli(nowMs)
	fires := make([]store.ScheduleFire, 0, len(recs))
	callbacks := false
	for _, rec := range recs {
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
		return nowMs + s.cfg.ClaimLease.Milliseconds(), nil
	}
	if err := s.client.register(ctx, dq.Namespace, dq.Queue, callbacks); err != nil {
		return 0, err
	}
	res, err := s.client.store.FireSchedules(ctx, dq.Namespace, dq.Queue, fires)
	if err != nil {
		return 0, err
	}
	s.step(ctx, "fire")
	for i, out := range res.Outcomes {
		if out.Published < 0 {
			continue
		}
		f := fires[i]
		s.stats.fires.Add(out.Published)
		s.stats.missed.Add(f.Missed)
		if s.cfg.OnFire != nil && (len(f.Jobs) > 0 || f.Missed > 0) {
			ev := FireEvent{Namespace: dq.Namespace, Queue: dq.Queue, Schedule: f.Name,
				Jobs: int(out.Published), Missed: int(f.Missed)}
			if len(f.Jobs) > 0 {
				ev.Lateness = time.Duration(res.NowMs-f.Jobs[0].TickMs) * time.Millisecond
			}
			s.cfg.OnFire(ev)
		}
	}
	return res.NextMs, nil
}

// plan decides what to fire of one due schedule (planTicks) and builds the jobs of its ticks;
// it reports whether they carry a callback.
func (s *Scheduler) plan(ns string, rec store.ScheduleRecord, now time.Time) (store.ScheduleFire, bool, error) {
	sch, rule, err := decodeSchedule(ns, rec)
	if err != nil {
		return store.ScheduleFire{}, false, err
	}
	p := planTicks(rule, time.UnixMilli(rec.NextRun), now, sch.CatchUp, s.cfg.Grace)
	f := store.ScheduleFire{Name: rec.Name, Version: rec.Version, FromMs: rec.NextRun,
		NextRunMs: runMs(p.next), Missed: p.missed, Jobs: make([]store.TickJob, 0, len(p.fire))}
	for _, tick := range p.fire {
		pp := sch.Job.publishParams(ns, rec.Name, tick, false)
		if sch.Jitter > 0 {
			pp.Delay = time.Duration(rand.Int64N(int64(sch.Jitter)))
		}
		job, err := s.client.validateJob(pp)
		if err != nil {
			return store.ScheduleFire{}, false, err
		}
		f.Jobs = append(f.Jobs, store.TickJob{TickMs: tick.UnixMilli(), Job: &job})
	}
	return f, sch.Job.Callback != nil, nil
}
