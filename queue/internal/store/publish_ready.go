package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// publishesReady reports whether jobs due now may take publish_ready.lua or publish_batch.lua: the
// scripts run as library functions (Redis 7+, so cmsgpack encodes records), and no publish waits
// for replicas (runReplicated sends the queue's whole key set).
func (s *Store) publishesReady(ctx context.Context) bool {
	return !s.waitsForReplicas(scriptPublish) && s.scripts.UsesFunctions(ctx)
}

// publishReady publishes one job that dueNowPlain accepts with publish_ready.lua: four keys and
// two or three arguments where publish.lua takes twelve and twenty-one. With a fresh reading of
// Redis's clock (clock.go) the client stamps the whole record and the script stores it without
// calling TIME; without one it sends the record in two pieces, the script puts Redis's time between
// them and answers it, and that is the new reading.
func (s *Store) publishReady(ctx context.Context, k queueKeys, f *NewJob) ([]Published, error) {
	clock := s.clocks.of(ctx, k.jobs())
	var now int64
	stamped := false
	if clock != nil {
		now, stamped = s.clocks.nowMs(clock)
	}
	ready := k.readyList(f.Priority)
	fn := s.scripts.Function(string(scriptPublishReady))
	var args []any
	if stamped {
		args = []any{"fcall", fn, 4, k.jobs(), ready, k.prios(), k.stats(), f.ID, encodeStampedRecord(f, now)}
	} else {
		head, tail := readyRecordAround(f)
		args = []any{"fcall", fn, 4, k.jobs(), ready, k.prios(), k.stats(), f.ID, head, tail}
	}
	sent := s.clocks.micros()
	cmd := s.scripts.Process(ctx, func() *redis.Cmd {
		cmd := redis.NewCmd(ctx, args...)
		cmd.SetFirstKeyPos(3) // the first key routes the call on a cluster
		return cmd
	})
	reply, err := cmd.Int64()
	if err != nil {
		if clock != nil {
			clock.forget() // perhaps another server took this one's place (a failover)
		}
		return nil, err
	}
	switch {
	case stamped && reply == 1:
	case !stamped && reply > 1:
		if clock != nil {
			s.clocks.learnOn(clock, reply, sent)
		}
	default:
		return nil, fmt.Errorf("unexpected reply %d from %s", reply, fn)
	}
	return []Published{{ID: f.ID}}, nil
}

// publishBatch publishes jobs of one queue that DueNowUnkeyed accepts with publish_batch.lua: six
// arguments per job where publish.lua takes fourteen, and records the client encoded.
func (s *Store) publishBatch(ctx context.Context, k queueKeys, jobs []*NewJob) ([]Published, error) {
	fn := s.scripts.Function(string(scriptPublishBatch))
	cmd := s.scripts.Process(ctx, func() *redis.Cmd {
		argv := make([]any, 0, 2+len(k.batchHead)+6*len(jobs))
		argv = append(argv, "fcall", fn)
		argv = append(argv, k.batchHead...)
		for _, f := range jobs {
			r := encodeReadyRecord(f)
			argv = append(argv, f.ID, f.Priority, f.TTLMs, r.head(), r.mid(), r.tail())
		}
		cmd := redis.NewCmd(ctx, argv...)
		cmd.SetFirstKeyPos(3) // the first key routes the call on a cluster
		return cmd
	})
	written, err := cmd.Int64()
	if err != nil {
		return nil, err
	}
	if written < 0 || written > int64(len(jobs)) {
		return nil, fmt.Errorf("unexpected reply %d from %s", written, fn)
	}
	out := make([]Published, len(jobs))
	for i, f := range jobs {
		out[i] = Published{ID: f.ID}
	}
	return out, nil
}

// allDueNowUnkeyed reports whether publish_batch.lua takes every one of jobs.
func allDueNowUnkeyed(jobs []*NewJob) bool {
	for _, f := range jobs {
		if !f.dueNowUnkeyed() {
			return false
		}
	}
	return true
}
