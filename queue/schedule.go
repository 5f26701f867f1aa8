package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/queue/internal/store"
)

// CatchUp says what a schedule does with the ticks it missed while no scheduler could fire them
// (every instance was down, say): ticks late by more than SchedulerConfig.Grace.
type CatchUp string

// The catch-up policies.
const (
	// CatchUpSkip fires none of the missed ticks; each is counted in Schedule.Missed.
	CatchUpSkip CatchUp = "skip"
	// CatchUpOne fires one job for the missed ticks (the newest); the others are counted missed.
	// The default.
	CatchUpOne CatchUp = "one"
	// CatchUpAll fires every missed tick, the newest MaxCatchUp of them at most; older ones are
	// counted missed.
	CatchUpAll CatchUp = "all"
)

// Attributes every job of a schedule carries besides its template's: the schedule's name, the
// tick's time (RFC 3339 in UTC, ms precision) and, for a job of Schedules.Trigger, "true" in
// AttrScheduleTriggered.
const (
	AttrSchedule          = "schedule"
	AttrScheduleTick      = "schedule_tick"
	AttrScheduleTriggered = "schedule_triggered"
)

// MaxScheduleJitter bounds ScheduleParams.Jitter.
const MaxScheduleJitter = time.Hour

// JobTemplate is the job a schedule publishes at each tick: PublishParams without the namespace
// (the schedule's), the delay (the tick decides) and the unique-key lifetime default.
type JobTemplate struct {
	Queue      string
	Payload    []byte
	Priority   int
	Tries      int
	TTL, TTR   time.Duration
	Backoff    Backoff
	UniqueKey  string
	UniqueFor  time.Duration
	Attributes map[string]string
	Callback   *Callback
}

// ScheduleParams define a schedule: a rule (Cron or Every) and the job it publishes at each tick.
type ScheduleParams struct {
	Namespace string
	Name      string
	// Cron is a cron expression: five fields (minute hour day-of-month month day-of-week), or six
	// with seconds first, or @yearly, @monthly, @weekly, @daily, @hourly. Give Cron or Every.
	Cron string
	// Every fires at each multiple of the period since StartAt (since the Unix epoch without it):
	// every 30s fires at :00 and :30. At least 1s.
	Every time.Duration
	// Timezone is the IANA zone Cron is read in ("Europe/Berlin"). Default UTC.
	Timezone string
	Job      JobTemplate
	// CatchUp is what happens to missed ticks. Default CatchUpOne.
	CatchUp CatchUp
	// Jitter delays each tick's job by a random time below it, so that many schedules on one tick
	// do not all land at once. At most MaxScheduleJitter. Default 0.
	Jitter time.Duration
	// StartAt and EndAt bound the ticks (zero: no bound).
	StartAt, EndAt time.Time
	// Paused schedules fire nothing until resumed.
	Paused bool
}

// Schedule is a stored schedule and its state.
type Schedule struct {
	ScheduleParams
	// NextRun is the next tick (zero: none, because the schedule ended or is paused).
	NextRun time.Time
	// LastRun is the tick of the last job published, and LastJobID that job (zero, "": none).
	LastRun   time.Time
	LastJobID string
	// Missed counts ticks not fired (catch-up policy); Fires the jobs published.
	Missed, Fires int64
	// Version counts the times the schedule was set.
	Version              int64
	CreatedAt, UpdatedAt time.Time
}

// ErrScheduleNotFound means no schedule of that name exists in the namespace.
var ErrScheduleNotFound = fmt.Errorf("%w: schedule", ErrNotFound)

// scheduleSpec is a schedule's definition as stored (the scripts never read it).
type scheduleSpec struct {
	Cron      string  `json:"cron,omitempty"`
	EveryMs   int64   `json:"every_ms,omitempty"`
	Timezone  string  `json:"timezone,omitempty"`
	CatchUp   CatchUp `json:"catch_up"`
	JitterMs  int64   `json:"jitter_ms,omitempty"`
	StartAtMs int64   `json:"start_at_ms,omitempty"`
	EndAtMs   int64   `json:"end_at_ms,omitempty"`
	Job       jobSpec `json:"job"`
}

type jobSpec struct {
	Payload       []byte            `json:"payload,omitempty"`
	Priority      int               `json:"priority,omitempty"`
	Tries         int               `json:"tries,omitempty"`
	TTLMs         int64             `json:"ttl_ms,omitempty"`
	TTRMs         int64             `json:"ttr_ms,omitempty"`
	BackoffBaseMs int64             `json:"backoff_base_ms,omitempty"`
	BackoffMaxMs  int64             `json:"backoff_max_ms,omitempty"`
	UniqueKey     string            `json:"unique_key,omitempty"`
	UniqueForMs   int64             `json:"unique_for_ms,omitempty"`
	Attributes    map[string]string `json:"attributes,omitempty"`
	Callback      string            `json:"callback,omitempty"`
}

// validateSchedule checks p and returns its rule; every error is a *sluice.FieldError naming the
// field as the HTTP API spells it (cron, timezone, job.priority).
func (c *Client) validateSchedule(p *ScheduleParams) (scheduleRule, error) {
	if !validName(p.Namespace) {
		return scheduleRule{}, invalid("namespace", "%q %s", p.Namespace, nameRule)
	}
	if !validName(p.Name) {
		return scheduleRule{}, invalid("name", "%q %s", p.Name, nameRule)
	}
	if p.Timezone == "" {
		p.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(p.Timezone)
	if err != nil || p.Timezone == "Local" {
		return scheduleRule{}, invalid("timezone", "%q is not an IANA time zone (such as Europe/Berlin)", p.Timezone)
	}
	r := scheduleRule{loc: loc, start: p.StartAt, end: p.EndAt}
	switch {
	case p.Cron != "" && p.Every != 0:
		return scheduleRule{}, invalid("every", "give either cron or every, not both")
	case p.Cron != "":
		if r.spec, err = parseCron(p.Cron); err != nil {
			return scheduleRule{}, invalid("cron", "%q: %v", p.Cron, err)
		}
	case p.Every != 0:
		if p.Every < time.Second {
			return scheduleRule{}, invalid("every", "%s is below the least period, 1s", p.Every)
		}
		if p.Every%time.Millisecond != 0 {
			return scheduleRule{}, invalid("every", "%s is not a whole number of milliseconds", p.Every)
		}
		r.every = p.Every
	default:
		return scheduleRule{}, invalid("cron", "give cron or every")
	}
	switch p.CatchUp {
	case "":
		p.CatchUp = CatchUpOne
	case CatchUpSkip, CatchUpOne, CatchUpAll:
	default:
		return scheduleRule{}, invalid("catch_up", "%q is not one of skip, one, all", p.CatchUp)
	}
	if p.Jitter < 0 || p.Jitter > MaxScheduleJitter {
		return scheduleRule{}, invalid("jitter", "%s is outside 0..%s", p.Jitter, MaxScheduleJitter)
	}
	if !p.StartAt.IsZero() && !p.EndAt.IsZero() && !p.EndAt.After(p.StartAt) {
		return scheduleRule{}, invalid("end_at", "must be after start_at")
	}
	for _, k := range []string{AttrSchedule, AttrScheduleTick, AttrScheduleTriggered} {
		if _, ok := p.Job.Attributes[k]; ok {
			return scheduleRule{}, invalid("job.attributes", "%q is set by the schedule", k)
		}
	}
	// The template must pass as a job at its longest delay (the jitter), with the attributes a
	// tick adds.
	pp := p.Job.publishParams(p.Namespace, p.Name, time.Time{}, false)
	pp.Delay = p.Jitter
	if _, err := c.validateJob(pp); err != nil {
		return scheduleRule{}, inField("job", err)
	}
	return r, nil
}

// publishParams is the job of one tick (tick) or of a trigger.
func (t JobTemplate) publishParams(ns, name string, tick time.Time, triggered bool) PublishParams {
	attrs := make(map[string]string, len(t.Attributes)+3)
	for k, v := range t.Attributes {
		attrs[k] = v
	}
	attrs[AttrSchedule] = name
	attrs[AttrScheduleTick] = tick.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if triggered {
		attrs[AttrScheduleTriggered] = "true"
	}
	return PublishParams{
		Namespace: ns, Queue: t.Queue, Payload: t.Payload, Priority: t.Priority, Tries: t.Tries,
		TTL: t.TTL, TTR: t.TTR, Backoff: t.Backoff, UniqueKey: t.UniqueKey, UniqueFor: t.UniqueFor,
		Attributes: attrs, Callback: t.Callback,
	}
}

func specOf(p ScheduleParams) scheduleSpec {
	j := p.Job
	s := scheduleSpec{
		Cron: p.Cron, EveryMs: p.Every.Milliseconds(), Timezone: p.Timezone, CatchUp: p.CatchUp,
		JitterMs: p.Jitter.Milliseconds(), StartAtMs: unixMsOrZero(p.StartAt), EndAtMs: unixMsOrZero(p.EndAt),
		Job: jobSpec{
			Payload: j.Payload, Priority: j.Priority, Tries: j.Tries, TTLMs: j.TTL.Milliseconds(),
			TTRMs: j.TTR.Milliseconds(), BackoffBaseMs: j.Backoff.Base.Milliseconds(),
			BackoffMaxMs: j.Backoff.Max.Milliseconds(), UniqueKey: j.UniqueKey,
			UniqueForMs: j.UniqueFor.Milliseconds(), Attributes: j.Attributes,
		},
	}
	if j.Callback != nil {
		s.Job.Callback = j.Callback.encode()
	}
	return s
}

// params is the definition back as ScheduleParams.
func (s scheduleSpec) params(ns, name, q string) ScheduleParams {
	j := s.Job
	p := ScheduleParams{
		Namespace: ns, Name: name, Cron: s.Cron, Every: ms(s.EveryMs), Timezone: s.Timezone,
		CatchUp: s.CatchUp, Jitter: ms(s.JitterMs), StartAt: timeOrZero(s.StartAtMs), EndAt: timeOrZero(s.EndAtMs),
		Job: JobTemplate{
			Queue: q, Payload: j.Payload, Priority: j.Priority, Tries: j.Tries, TTL: ms(j.TTLMs), TTR: ms(j.TTRMs),
			Backoff:   Backoff{Base: ms(j.BackoffBaseMs), Max: ms(j.BackoffMaxMs)},
			UniqueKey: j.UniqueKey, UniqueFor: ms(j.UniqueForMs), Attributes: j.Attributes,
		},
	}
	if j.Callback != "" {
		p.Job.Callback = decodeCallback(j.Callback)
	}
	return p
}

func unixMsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func timeOrZero(msec int64) time.Time {
	if msec <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(msec)
}

// runMsOrZero is a stored run time (store.NoRun, or 0 for "never") as a time.
func runMsOrZero(msec int64) time.Time {
	if msec == store.NoRun {
		return time.Time{}
	}
	return timeOrZero(msec)
}

// parseSpec reads a stored definition and builds its rule.
func parseSpec(raw string) (scheduleSpec, scheduleRule, error) {
	var spec scheduleSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return scheduleSpec{}, scheduleRule{}, fmt.Errorf("unreadable definition: %w", err)
	}
	loc, err := time.LoadLocation(cmp.Or(spec.Timezone, "UTC"))
	if err != nil {
		return scheduleSpec{}, scheduleRule{}, err
	}
	rule := scheduleRule{loc: loc, every: ms(spec.EveryMs), start: timeOrZero(spec.StartAtMs), end: timeOrZero(spec.EndAtMs)}
	if spec.Cron != "" {
		if rule.spec, err = parseCron(spec.Cron); err != nil {
			return scheduleSpec{}, scheduleRule{}, err
		}
	}
	return spec, rule, nil
}

// decodeSchedule reads a stored schedule, its rule included.
func decodeSchedule(ns string, r store.ScheduleRecord) (Schedule, scheduleRule, error) {
	spec, rule, err := parseSpec(r.Spec)
	if err != nil {
		return Schedule{}, scheduleRule{}, fmt.Errorf("queue: schedule %s/%s: %w", ns, r.Name, err)
	}
	p := spec.params(ns, r.Name, r.Queue)
	p.Paused = r.Paused
	s := Schedule{
		ScheduleParams: p, NextRun: runMsOrZero(r.NextRun), LastRun: timeOrZero(r.LastRun),
		LastJobID: r.LastJobID, Missed: r.Missed, Fires: r.Fires, Version: r.Version,
		CreatedAt: timeOrZero(r.CreatedAt), UpdatedAt: timeOrZero(r.UpdatedAt),
	}
	if s.Paused {
		s.NextRun = time.Time{}
	}
	return s, rule, nil
}

// runMs is a rule's next run as stored: ms, or store.NoRun.
func runMs(t time.Time) int64 {
	if t.IsZero() {
		return store.NoRun
	}
	return ceilUnixMilli(t)
}

// Schedules manages a client's schedules: create, read, change, pause, trigger. The jobs of their
// ticks are published by Schedulers, which any number of processes run.
type Schedules struct{ c *Client }

// Schedules returns the client's schedules.
func (c *Client) Schedules() Schedules { return Schedules{c: c} }

// Set creates or replaces a schedule. Its next run is computed from Redis's clock; replacing a
// schedule keeps its counters and last run and starts its ticks over from now. Bad input is a
// *sluice.FieldError naming the field, and stores nothing.
func (s Schedules) Set(ctx context.Context, p ScheduleParams) (Schedule, error) {
	c := s.c
	rule, err := c.validateSchedule(&p)
	if err != nil {
		return Schedule{}, err
	}
	now, err := c.store.RedisNow(ctx)
	if err != nil {
		return Schedule{}, fmt.Errorf("queue: set schedule: %w", err)
	}
	next := rule.next(time.UnixMilli(now))
	if !p.EndAt.IsZero() && !p.EndAt.After(time.UnixMilli(now)) {
		return Schedule{}, invalid("end_at", "%s has passed: the schedule would never fire", p.EndAt.UTC().Format(time.RFC3339))
	}
	switch {
	case next.IsZero() && !p.EndAt.IsZero():
		return Schedule{}, invalid("end_at", "no tick of the rule falls between now and %s", p.EndAt.UTC().Format(time.RFC3339))
	case next.IsZero():
		return Schedule{}, invalid("cron", "%q names no time that comes", p.Cron)
	}
	raw, err := json.Marshal(specOf(p))
	if err != nil {
		return Schedule{}, fmt.Errorf("queue: set schedule: %w", err)
	}
	old, found, err := c.store.ScheduleQueue(ctx, p.Namespace, p.Name)
	if err != nil {
		return Schedule{}, fmt.Errorf("queue: set schedule: %w", err)
	}
	quota, err := c.scheduleQuota(ctx, p.Namespace, found)
	if err != nil {
		return Schedule{}, err
	}
	if err := c.register(ctx, p.Namespace, p.Job.Queue, p.Job.Callback != nil); err != nil {
		return Schedule{}, err
	}
	if found && old != p.Job.Queue {
		if err := c.store.MoveSchedule(ctx, p.Namespace, old, p.Name); err != nil {
			return Schedule{}, fmt.Errorf("queue: set schedule: %w", err)
		}
	}
	_, err = c.store.PutSchedule(ctx, p.Namespace, p.Job.Queue, p.Name, string(raw), runMs(next), p.Paused, quota)
	switch {
	case errors.Is(err, store.ErrScheduleQuota):
		return Schedule{}, &sluice.QuotaError{Namespace: p.Namespace, Quota: "max_schedules", Limit: quota}
	case err != nil:
		return Schedule{}, fmt.Errorf("queue: set schedule: %w", err)
	}
	return s.Get(ctx, p.Namespace, p.Name)
}

// scheduleQuota returns namespace ns's quota of schedules (0: none), and refuses a new schedule
// (exists false) at once when the namespace holds that many already, before anything is written.
// The script that names the schedule checks the quota again, so concurrent sets cannot pass it
// together.
func (c *Client) scheduleQuota(ctx context.Context, ns string, exists bool) (int64, error) {
	if c.cfg.ScheduleQuota == nil {
		return 0, nil
	}
	quota, err := c.cfg.ScheduleQuota(ctx, ns)
	if err != nil || quota <= 0 || exists {
		return max(quota, 0), err
	}
	n, err := c.store.ScheduleCount(ctx, ns)
	if err != nil {
		return 0, fmt.Errorf("queue: set schedule: %w", err)
	}
	if n >= quota {
		return 0, &sluice.QuotaError{Namespace: ns, Quota: "max_schedules", Limit: quota}
	}
	return quota, nil
}

// Count is how many schedules namespace ns has (one O(1) command).
func (s Schedules) Count(ctx context.Context, ns string) (int64, error) {
	if !validName(ns) {
		return 0, invalid("namespace", "%q %s", ns, nameRule)
	}
	n, err := s.c.store.ScheduleCount(ctx, ns)
	if err != nil {
		return 0, fmt.Errorf("queue: count schedules: %w", err)
	}
	return n, nil
}

// Get reads a schedule; ErrScheduleNotFound when there is none.
func (s Schedules) Get(ctx context.Context, ns, name string) (Schedule, error) {
	sch, _, err := s.get(ctx, ns, name)
	return sch, err
}

func (s Schedules) get(ctx context.Context, ns, name string) (Schedule, scheduleRule, error) {
	if !validName(ns) || !validName(name) {
		return Schedule{}, scheduleRule{}, ErrScheduleNotFound
	}
	q, found, err := s.c.store.ScheduleQueue(ctx, ns, name)
	if err != nil {
		return Schedule{}, scheduleRule{}, fmt.Errorf("queue: get schedule: %w", err)
	}
	if !found {
		return Schedule{}, scheduleRule{}, ErrScheduleNotFound
	}
	rec, found, err := s.c.store.GetSchedule(ctx, ns, q, name)
	if err != nil {
		return Schedule{}, scheduleRule{}, fmt.Errorf("queue: get schedule: %w", err)
	}
	if !found {
		return Schedule{}, scheduleRule{}, ErrScheduleNotFound
	}
	return decodeSchedule(ns, rec)
}

// ListSchedulesParams page through a namespace's schedules in name order.
type ListSchedulesParams struct {
	// After is the last name of the page before ("": from the start).
	After string
	// Limit is the most schedules returned: default 100, at most 1000.
	Limit int
}

// MaxListSchedules bounds ListSchedulesParams.Limit.
const MaxListSchedules = 1000

// List reads a page of a namespace's schedules in name order.
func (s Schedules) List(ctx context.Context, ns string, p ListSchedulesParams) ([]Schedule, error) {
	if !validName(ns) {
		return nil, invalid("namespace", "%q %s", ns, nameRule)
	}
	if p.Limit < 0 || p.Limit > MaxListSchedules {
		return nil, invalid("limit", "%d is outside 1..%d", p.Limit, MaxListSchedules)
	}
	recs, err := s.c.store.ListSchedules(ctx, ns, p.After, cmp.Or(p.Limit, 100))
	if err != nil {
		return nil, fmt.Errorf("queue: list schedules: %w", err)
	}
	out := make([]Schedule, 0, len(recs))
	for _, r := range recs {
		sch, _, err := decodeSchedule(ns, r)
		if err != nil {
			return nil, err
		}
		out = append(out, sch)
	}
	return out, nil
}

// Delete deletes a schedule; ErrScheduleNotFound when there is none. Jobs it published stay.
func (s Schedules) Delete(ctx context.Context, ns, name string) error {
	if !validName(ns) || !validName(name) {
		return ErrScheduleNotFound
	}
	q, found, err := s.c.store.ScheduleQueue(ctx, ns, name)
	if err != nil {
		return fmt.Errorf("queue: delete schedule: %w", err)
	}
	if !found {
		return ErrScheduleNotFound
	}
	existed, err := s.c.store.DeleteSchedule(ctx, ns, q, name)
	if err != nil {
		return fmt.Errorf("queue: delete schedule: %w", err)
	}
	if !existed {
		return ErrScheduleNotFound
	}
	return nil
}

// Pause stops a schedule's ticks until Resume; ticks while paused are neither fired nor counted
// missed.
func (s Schedules) Pause(ctx context.Context, ns, name string) (Schedule, error) {
	return s.setPaused(ctx, ns, name, true)
}

// Resume restarts a paused schedule at its first tick after now.
func (s Schedules) Resume(ctx context.Context, ns, name string) (Schedule, error) {
	return s.setPaused(ctx, ns, name, false)
}

func (s Schedules) setPaused(ctx context.Context, ns, name string, paused bool) (Schedule, error) {
	sch, rule, err := s.get(ctx, ns, name)
	if err != nil {
		return Schedule{}, err
	}
	next := int64(store.NoRun)
	if !paused {
		now, err := s.c.store.RedisNow(ctx)
		if err != nil {
			return Schedule{}, fmt.Errorf("queue: resume schedule: %w", err)
		}
		next = runMs(rule.next(time.UnixMilli(now)))
	}
	found, err := s.c.store.PauseSchedule(ctx, ns, sch.Job.Queue, name, paused, next)
	if err != nil {
		return Schedule{}, fmt.Errorf("queue: pause schedule: %w", err)
	}
	if !found {
		return Schedule{}, ErrScheduleNotFound
	}
	return s.Get(ctx, ns, name)
}

// TriggerResult is the job a trigger published.
type TriggerResult struct {
	JobID string
	// Duplicate reports that the template's unique key was held and nothing was published.
	Duplicate bool
}

// Trigger publishes the schedule's job now, whether or not it is paused, and leaves its next run
// as it is. The job's schedule_tick is the trigger's time and schedule_triggered is "true".
func (s Schedules) Trigger(ctx context.Context, ns, name string) (TriggerResult, error) {
	sch, _, err := s.get(ctx, ns, name)
	if err != nil {
		return TriggerResult{}, err
	}
	now, err := s.c.store.RedisNow(ctx)
	if err != nil {
		return TriggerResult{}, fmt.Errorf("queue: trigger schedule: %w", err)
	}
	job, err := s.c.validateJob(sch.Job.publishParams(ns, name, time.UnixMilli(now), true))
	if err != nil {
		return TriggerResult{}, fmt.Errorf("queue: trigger schedule %s/%s: %w", ns, name, err)
	}
	// A trigger is a publish the caller asked for: the namespace's storage quota refuses it as it
	// would refuse the publish.
	if err := s.c.checkStorage(ctx, ns, 1, storedBytes(job.Payload)); err != nil {
		return TriggerResult{}, err
	}
	results, err := s.c.store.FireSchedules(ctx, []store.FireBatch{{Namespace: ns, Queue: sch.Job.Queue,
		Fires: []store.ScheduleFire{{
			Name: name, Version: sch.Version, FromMs: store.TriggerRun, NextRunMs: store.NoRun,
			Jobs: []store.TickJob{{TickMs: now, Job: &job}},
		}}}})
	if err == nil {
		err = results[0].Err
	}
	if err != nil {
		return TriggerResult{}, fmt.Errorf("queue: trigger schedule: %w", err)
	}
	switch out := results[0].Outcomes[0]; {
	case out.Published < 0:
		return TriggerResult{}, fmt.Errorf("%w (changed or deleted while triggered)", ErrScheduleNotFound)
	case out.Published == 0:
		return TriggerResult{Duplicate: true}, nil
	default:
		s.c.usage.add(ns, 1, storedBytes(job.Payload))
		return TriggerResult{JobID: out.LastJobID}, nil
	}
}
