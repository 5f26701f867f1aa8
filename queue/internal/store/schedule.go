package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// scheduleFiles are the schedule scripts that need none of lib.lua's helpers (all but
// schedule_fire.lua, which publishes jobs and so belongs to the queue's library).
//
//go:embed lua/schedule_*.lua
var scheduleFiles embed.FS

// scriptScheduleFire fires ticks: publishes their jobs and advances their schedules. It belongs to
// the queue's library (it publishes with lib.lua's helpers); the others to scheduleLibrary.
const scriptScheduleFire scriptName = "schedule_fire"

// The scripts of scheduleLibrary, each named after its file.
const (
	scriptSchedulePut, scriptScheduleDelete, scriptSchedulePause = "schedule_put", "schedule_delete", "schedule_pause"
	scriptScheduleDue, scriptScheduleClaim                       = "schedule_due", "schedule_claim"
	scriptScheduleSettle, scriptScheduleLower                    = "schedule_settle", "schedule_lower"
	scriptScheduleUnindex, scriptScheduleIndex                   = "schedule_unindex", "schedule_index"
)

// scheduleLibrary is the schedule scripts that work on schedules and the due index alone.
var scheduleLibrary = redisx.NewLibraryFromFiles(scheduleFiles, redisx.LibrarySpec{
	Name: "sluice_schedules",
	Scripts: redisx.Scripts([]string{scriptSchedulePut, scriptScheduleDelete, scriptSchedulePause,
		scriptScheduleDue, scriptScheduleClaim, scriptScheduleSettle, scriptScheduleLower, scriptScheduleUnindex, scriptScheduleIndex},
		map[string]string{scriptScheduleDue: "no-writes", scriptScheduleDelete: "allow-oom", scriptScheduleUnindex: "allow-oom",
			scriptScheduleSettle: "allow-oom", scriptScheduleClaim: "allow-oom"}),
})

// NoRun is the next run of a schedule that has none (it ended, or its rule has no later time).
const NoRun = -1

// ScheduleRecord is one stored schedule: its definition, which only package queue reads, and the
// state the scripts keep.
type ScheduleRecord struct {
	Name, Queue string
	Spec        string // the definition (JSON)
	Version     int64  // bumped by every replace
	Paused      bool
	NextRun     int64 // ms; NoRun: none
	LastRun     int64 // ms of the last tick fired; 0: none
	LastJobID   string
	Missed      int64 // ticks not fired (catch-up policy)
	Fires       int64 // jobs published
	CreatedAt   int64 // ms
	UpdatedAt   int64 // ms
}

// scheduleFromMap reads a schedule's hash (HGETALL).
func scheduleFromMap(name, q string, m map[string]string) ScheduleRecord {
	n := func(field string) int64 {
		v, _ := strconv.ParseInt(m[field], 10, 64)
		return v
	}
	r := ScheduleRecord{
		Name: name, Queue: q, Spec: m["spec"], Version: n("version"), Paused: m["paused"] == "1",
		NextRun: NoRun, LastRun: n("last_run"), LastJobID: m["last_job_id"], Missed: n("missed"),
		Fires: n("fires"), CreatedAt: n("created_at"), UpdatedAt: n("updated_at"),
	}
	if _, ok := m["next_run"]; ok {
		r.NextRun = n("next_run")
	}
	return r
}

// parseScheduleRecord reads a schedule's hash from a script's reply (a flat field, value array).
func parseScheduleRecord(name, q string, fields []any) ScheduleRecord {
	m := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		m[str(fields[i])] = str(fields[i+1])
	}
	return scheduleFromMap(name, q, m)
}

// runSchedule runs one script of the schedule library.
func (s *Store) runSchedule(ctx context.Context, name string, keys []string, args ...any) *redis.Cmd {
	return s.scheduleScripts.Run(ctx, name, keys, args...)
}

// RedisNow is Redis's time in ms (TIME on any one of its servers).
func (s *Store) RedisNow(ctx context.Context) (int64, error) {
	t, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return 0, err
	}
	return t.UnixMilli(), nil
}

// ScheduleCount is how many schedules namespace ns has (HLEN of its index, O(1)).
func (s *Store) ScheduleCount(ctx context.Context, ns string) (int64, error) {
	return s.rdb.HLen(ctx, namespaceSchedulesKey(s.cfg.Prefix, ns)).Result()
}

// ScheduleQueue returns the queue of a namespace's schedule, and false when there is no such
// schedule.
func (s *Store) ScheduleQueue(ctx context.Context, ns, name string) (string, bool, error) {
	q, err := s.rdb.HGet(ctx, namespaceSchedulesKey(s.cfg.Prefix, ns), name).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return q, err == nil, err
}

// ErrScheduleQuota is PutSchedule's answer when the namespace holds its quota of schedules
// already and the schedule is a new one.
var ErrScheduleQuota = errors.New("store: the namespace holds its quota of schedules")

// PutSchedule creates or replaces a schedule of queue q with its next run (NoRun: none), and
// returns its version. The namespace's index names it first, under the namespace's quota of
// schedules (quota, 0: none; schedule_index.lua refuses a new name past it with
// ErrScheduleQuota), and the due index is lowered before and after the script
// (schedule_lower.lua), so a crash between the calls leaves at worst an index entry that names
// nothing, never a schedule that no index finds. A schedule that moved to another queue is
// deleted from the old one (MoveSchedule) by the caller first.
func (s *Store) PutSchedule(ctx context.Context, ns, q, name, spec string, nextRun int64, paused bool, quota int64) (int64, error) {
	n, err := s.runSchedule(ctx, scriptScheduleIndex, []string{namespaceSchedulesKey(s.cfg.Prefix, ns)}, name, q, quota).Int64()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, ErrScheduleQuota
	}
	visit := !paused && nextRun != NoRun
	if visit {
		if err := s.lowerDue(ctx, ns, q, nextRun); err != nil {
			return 0, err
		}
	}
	k := newScheduleKeys(s.cfg.Prefix, ns, q, name)
	version, err := s.runSchedule(ctx, scriptSchedulePut, []string{k.hash, k.due, k.names},
		name, spec, nextRun, boolArg(paused)).Int64()
	if err != nil {
		return 0, err
	}
	if visit {
		if err := s.lowerDue(ctx, ns, q, nextRun); err != nil {
			return 0, err
		}
	}
	return version, nil
}

// lowerDue asks for queue q's schedules to be visited no later than at (schedule_lower.lua).
func (s *Store) lowerDue(ctx context.Context, ns, q string, at int64) error {
	m := dueMember(ns, q)
	z, g := dueShardKeys(s.cfg.Prefix, dueShardOf(m))
	return s.runSchedule(ctx, scriptScheduleLower, []string{z, g}, m, at).Err()
}

// GetSchedule reads one schedule of queue q; false when it does not exist.
func (s *Store) GetSchedule(ctx context.Context, ns, q, name string) (ScheduleRecord, bool, error) {
	k := newScheduleKeys(s.cfg.Prefix, ns, q, name)
	m, err := s.rdb.HGetAll(ctx, k.hash).Result()
	if err != nil || len(m) == 0 {
		return ScheduleRecord{}, false, err
	}
	return scheduleFromMap(name, q, m), true, nil
}

// ListSchedules reads up to limit schedules of a namespace in name order, the first after name
// after ("" from the start), one pipelined round trip after the read of the namespace's index.
// An index entry whose schedule is gone (a crash between a delete's two calls) is skipped.
func (s *Store) ListSchedules(ctx context.Context, ns, after string, limit int) ([]ScheduleRecord, error) {
	index, err := s.rdb.HGetAll(ctx, namespaceSchedulesKey(s.cfg.Prefix, ns)).Result()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(index))
	for name := range index {
		if name > after {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	names = names[:min(limit, len(names))]
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(names))
	for i, name := range names {
		cmds[i] = pipe.HGetAll(ctx, newScheduleKeys(s.cfg.Prefix, ns, index[name], name).hash)
	}
	if len(names) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]ScheduleRecord, 0, len(names))
	for i, name := range names {
		if m := cmds[i].Val(); len(m) > 0 {
			out = append(out, scheduleFromMap(name, index[name], m))
		}
	}
	return out, nil
}

// DeleteSchedule deletes a schedule of queue q, then its entry in the namespace's index; false
// when it did not exist.
func (s *Store) DeleteSchedule(ctx context.Context, ns, q, name string) (bool, error) {
	existed, err := s.deleteFromQueue(ctx, ns, q, name)
	if err != nil {
		return false, err
	}
	if err := s.rdb.HDel(ctx, namespaceSchedulesKey(s.cfg.Prefix, ns), name).Err(); err != nil {
		return false, err
	}
	return existed, nil
}

// MoveSchedule deletes a schedule from queue q, the queue it leaves, keeping its index entry (a
// PutSchedule on its new queue follows).
func (s *Store) MoveSchedule(ctx context.Context, ns, q, name string) error {
	_, err := s.deleteFromQueue(ctx, ns, q, name)
	return err
}

func (s *Store) deleteFromQueue(ctx context.Context, ns, q, name string) (bool, error) {
	k := newScheduleKeys(s.cfg.Prefix, ns, q, name)
	n, err := s.runSchedule(ctx, scriptScheduleDelete, []string{k.hash, k.due, k.names}, name).Int64()
	return n == 1, err
}

// PauseSchedule pauses a schedule, or resumes it at nextRun (NoRun: none); false when it does
// not exist.
func (s *Store) PauseSchedule(ctx context.Context, ns, q, name string, paused bool, nextRun int64) (bool, error) {
	resume := !paused && nextRun != NoRun
	if resume {
		if err := s.lowerDue(ctx, ns, q, nextRun); err != nil {
			return false, err
		}
	}
	k := newScheduleKeys(s.cfg.Prefix, ns, q, name)
	n, err := s.runSchedule(ctx, scriptSchedulePause, []string{k.hash, k.due}, name, boolArg(paused), nextRun).Int64()
	if err != nil || n == 0 {
		return false, err
	}
	if resume {
		if err := s.lowerDue(ctx, ns, q, nextRun); err != nil {
			return false, err
		}
	}
	return true, nil
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// DueQueue is a queue claimed from the due index: its schedules are due.
type DueQueue struct {
	Namespace, Queue string
	member, gen      string
	shard            int
}

// DueClaim is what one claim of the due index found.
type DueClaim struct {
	Queues []DueQueue
	// NowMs is Redis's time at the claim; NextMs the earliest visit left in the index (NoRun:
	// none), when the scheduler looks again.
	NowMs, NextMs int64
}

// ClaimDueQueues claims up to limit queues per shard of the due index whose schedules are due
// within ahead, for lease (schedule_claim.lua), one pipelined round trip over the shards.
func (s *Store) ClaimDueQueues(ctx context.Context, limit int, lease, ahead time.Duration) (DueClaim, error) {
	calls := make([]redisx.ScriptCall, DueShards)
	for i := range calls {
		z, g := dueShardKeys(s.cfg.Prefix, i)
		calls[i] = redisx.ScriptCall{Name: scriptScheduleClaim, Keys: []string{z, g}, Args: []any{limit, lease.Milliseconds(), ahead.Milliseconds()}}
	}
	cmds, err := s.scheduleScripts.RunMany(ctx, calls)
	if err != nil {
		return DueClaim{}, err
	}
	claim := DueClaim{NextMs: NoRun}
	for shard, cmd := range cmds {
		vals, err := cmd.Slice()
		if err != nil {
			return DueClaim{}, fmt.Errorf("claim due schedules: %w", err)
		}
		if len(vals) < 2 {
			return DueClaim{}, fmt.Errorf("claim due schedules: unexpected reply of %d values", len(vals))
		}
		claim.NowMs = max(claim.NowMs, num(vals[0]))
		if next := num(vals[1]); next != NoRun && (claim.NextMs == NoRun || next < claim.NextMs) {
			claim.NextMs = next
		}
		for i := 2; i+1 < len(vals); i += 2 {
			m := str(vals[i])
			ns, q, ok := splitMember(m)
			if !ok {
				continue
			}
			claim.Queues = append(claim.Queues, DueQueue{Namespace: ns, Queue: q, member: m, gen: str(vals[i+1]), shard: shard})
		}
	}
	return claim, nil
}

func splitMember(m string) (ns, q string, ok bool) {
	for i := 0; i < len(m); i++ {
		if m[i] == ':' {
			return m[:i], m[i+1:], true
		}
	}
	return "", "", false
}

// SettleQueues sets when each visited queue is visited next: its earliest next run (NoRun: it
// leaves the index), unless a change lowered it since the claim (schedule_settle.lua). One
// pipelined round trip, one call per shard.
func (s *Store) SettleQueues(ctx context.Context, visited []DueQueue, nextRuns []int64) error {
	var byShard [DueShards][]any
	for i, d := range visited {
		byShard[d.shard] = append(byShard[d.shard], d.member, d.gen, nextRuns[i])
	}
	var calls []redisx.ScriptCall
	for shard, args := range byShard {
		if len(args) > 0 {
			z, g := dueShardKeys(s.cfg.Prefix, shard)
			calls = append(calls, redisx.ScriptCall{Name: scriptScheduleSettle, Keys: []string{z, g}, Args: args})
		}
	}
	if len(calls) == 0 {
		return nil
	}
	cmds, err := s.scheduleScripts.RunMany(ctx, calls)
	if err != nil {
		return err
	}
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return fmt.Errorf("settle due schedules: %w", err)
		}
	}
	return nil
}

// TickJob is the job of one tick.
type TickJob struct {
	TickMs int64
	Job    *NewJob
}

// ScheduleFire is what to do with one schedule in a fire call: the version and next run it was
// read at (FromMs; TriggerRun: a trigger, which leaves the next run alone), the new next run, the
// ticks counted missed and the jobs to publish.
type ScheduleFire struct {
	Name      string
	Version   int64
	FromMs    int64
	NextRunMs int64
	Missed    int64
	Jobs      []TickJob
}

// TriggerRun as ScheduleFire.FromMs makes a fire call a trigger.
const TriggerRun = -2

// FireOutcome is what a fire call did to one schedule.
type FireOutcome struct {
	// Published is the number of jobs published; -1 when the schedule was left alone (fired by
	// another call already, or changed since it was read).
	Published int64
	LastJobID string
}

// FireResult is the outcome of one fire call.
type FireResult struct {
	NowMs int64 // Redis's time when the call ran
	// NextMs is the earliest next run of the queue's schedules after the call (NoRun: none).
	NextMs   int64
	Outcomes []FireOutcome
	// Err is the call's failure (FireSchedules): then nothing else is set.
	Err error
}
