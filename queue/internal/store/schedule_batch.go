package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// DueRead is what schedule_due.lua found in one queue: its due schedules, Redis's time, and the
// earliest next run of the others (NoRun: none); Err when the call failed.
type DueRead struct {
	Due    []ScheduleRecord
	NowMs  int64
	NextMs int64
	Err    error
}

// DueSchedules reads up to limit schedules of each queue due within ahead, one schedule_due.lua
// call per queue, pipelined in one round trip. A queue whose call failed carries its error.
func (s *Store) DueSchedules(ctx context.Context, queues []DueQueue, limit int, ahead time.Duration) ([]DueRead, error) {
	calls := make([]redisx.ScriptCall, len(queues))
	for i, dq := range queues {
		k := newScheduleKeys(s.cfg.Prefix, dq.Namespace, dq.Queue, "")
		calls[i] = redisx.ScriptCall{Name: scriptScheduleDue, Keys: []string{k.due, k.prefix}, Args: []any{limit, ahead.Milliseconds()}}
	}
	cmds, err := s.scheduleScripts.RunMany(ctx, calls)
	if err != nil {
		return nil, err
	}
	out := make([]DueRead, len(queues))
	for i, cmd := range cmds {
		out[i] = parseDueRead(cmd, queues[i].Queue)
	}
	return out, nil
}

func parseDueRead(cmd *redis.Cmd, q string) DueRead {
	vals, err := cmd.Slice()
	if err != nil {
		return DueRead{Err: err}
	}
	if len(vals) < 2 {
		return DueRead{Err: fmt.Errorf("due schedules: unexpected reply of %d values", len(vals))}
	}
	r := DueRead{NowMs: num(vals[0]), NextMs: num(vals[1])}
	for i := 2; i+1 < len(vals); i += 2 {
		fields, _ := vals[i+1].([]any)
		r.Due = append(r.Due, parseScheduleRecord(str(vals[i]), q, fields))
	}
	return r
}

// FireBatch is a fire call on one queue.
type FireBatch struct {
	Namespace, Queue string
	Fires            []ScheduleFire
}

// FireSchedules runs schedule_fire.lua once per batch, pipelined in one round trip. A schedule
// with no such hash is left alone (Published -1); a batch whose call failed carries its error.
func (s *Store) FireSchedules(ctx context.Context, batches []FireBatch) ([]FireResult, error) {
	calls := make([]scriptCall, len(batches))
	for i, b := range batches {
		calls[i] = s.fireCall(b)
	}
	cmds, err := s.runMany(ctx, calls)
	if err != nil {
		return nil, err
	}
	out := make([]FireResult, len(batches))
	for i, cmd := range cmds {
		out[i] = parseFireResult(cmd, len(batches[i].Fires))
	}
	return out, nil
}

func (s *Store) fireCall(b FireBatch) scriptCall {
	extra := make([]string, 0, 1+len(b.Fires))
	extra = append(extra, newScheduleKeys(s.cfg.Prefix, b.Namespace, b.Queue, "").due)
	args := []any{len(b.Fires)}
	for _, f := range b.Fires {
		extra = append(extra, newScheduleKeys(s.cfg.Prefix, b.Namespace, b.Queue, f.Name).hash)
		args = append(args, f.Name, f.Version, f.FromMs, f.NextRunMs, f.Missed, len(f.Jobs))
		for _, j := range f.Jobs {
			args = append(args, j.TickMs)
			args = j.Job.appendArgs(args)
		}
	}
	return scriptCall{script: scriptScheduleFire, keys: s.keys.get(b.Namespace, b.Queue).withKeys(extra...), args: args}
}

func parseFireResult(cmd *redis.Cmd, n int) FireResult {
	vals, err := cmd.Slice()
	if err != nil {
		return FireResult{Err: err}
	}
	if len(vals) != 2+2*n {
		return FireResult{Err: fmt.Errorf("fire schedules: unexpected reply of %d values", len(vals))}
	}
	res := FireResult{NowMs: num(vals[0]), NextMs: num(vals[1]), Outcomes: make([]FireOutcome, n)}
	for i := range n {
		res.Outcomes[i] = FireOutcome{Published: num(vals[2+2*i]), LastJobID: str(vals[3+2*i])}
	}
	return res
}
