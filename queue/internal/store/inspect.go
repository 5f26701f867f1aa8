package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Get reads a job in any state, with its position among ready jobs when it is ready, or returns
// ErrNotFound. It only reads.
func (s *Store) Get(ctx context.Context, ns, q, id string) (Job, error) {
	return jobReply(s.run(ctx, scriptGet, s.keys.get(ns, q), id))
}

// Peek reads the job a consumer would get next, or returns ErrNotFound when no job is ready.
func (s *Store) Peek(ctx context.Context, ns, q string) (Job, error) {
	return jobReply(s.run(ctx, scriptPeek, s.keys.get(ns, q)))
}

func jobReply(cmd *redis.Cmd) (Job, error) {
	f, err := cmd.Slice()
	if errors.Is(err, redis.Nil) {
		return Job{}, ErrNotFound
	}
	if err != nil {
		return Job{}, err
	}
	if len(f) != fieldsPerJob {
		return Job{}, fmt.Errorf("unexpected reply of %d fields", len(f))
	}
	return parseJob(f), nil
}

// Delete removes jobs in any state and returns how many existed.
func (s *Store) Delete(ctx context.Context, ns, q string, ids []string) (int, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return s.run(ctx, scriptDelete, s.keys.get(ns, q), args...).Int()
}

// Stats are a queue's depths and counters: queue.Stats's fields, in its order, so that the queue
// converts one into the other.
type Stats struct {
	Ready, Delayed, Leased, Dead, Done int64
	Paused                             bool
	OldestReadyMs                      int64
	// ProcessingTimes is the histogram of acked deliveries by processing time: bucket -> count
	// (lib.lua, ack_times).
	ProcessingTimes map[int]int64

	Published, Consumed, Acked, Nacked, Retried, DeadLettered, Expired, Deleted, Released int64
	Respawned, DeadDropped, Purged                                                        int64
}

// Stats reads the queue's depths and counters: O(priorities in use), never O(jobs).
func (s *Store) Stats(ctx context.Context, ns, q string) (Stats, error) {
	return readStats(0, s.run(ctx, scriptStats, s.keys.get(ns, q)))
}

// StatsMany reads the stats of queues of one namespace in one pipelined round trip.
func (s *Store) StatsMany(ctx context.Context, ns string, queues []string) ([]Stats, error) {
	calls := make([]scriptCall, len(queues))
	for i, q := range queues {
		calls[i] = scriptCall{script: scriptStats, keys: s.keys.get(ns, q)}
	}
	return readEach(ctx, s, calls, func(i int) (string, string) { return ns, queues[i] }, readStats)
}

// readStats reads stats.lua's answer: the depths, the paused flag and the oldest ready job's age,
// then the counters' hash (with the processing-time histogram's fields) as
// field, value pairs.
func readStats(_ int, cmd *redis.Cmd) (Stats, error) {
	f, err := cmd.Slice()
	if err != nil {
		return Stats{}, err
	}
	if len(f) < 7 {
		return Stats{}, fmt.Errorf("unexpected stats reply of %d fields", len(f))
	}
	s := Stats{
		Ready: num(f[0]), Delayed: num(f[1]), Leased: num(f[2]), Dead: num(f[3]), Done: num(f[4]),
		Paused: num(f[5]) == 1, OldestReadyMs: num(f[6]),
	}
	counters := map[string]*int64{
		"published": &s.Published, "consumed": &s.Consumed, "acked": &s.Acked, "nacked": &s.Nacked,
		"retried": &s.Retried, "dead_lettered": &s.DeadLettered, "expired": &s.Expired,
		"deleted": &s.Deleted, "released": &s.Released, "respawned": &s.Respawned,
		"dead_dropped": &s.DeadDropped, "purged": &s.Purged,
	}
	for i := 7; i+1 < len(f); i += 2 {
		name := str(f[i])
		var n int64
		_, _ = fmt.Sscan(str(f[i+1]), &n)
		if p, ok := counters[name]; ok {
			*p = n
		} else if b, ok := strings.CutPrefix(name, "pt:"); ok {
			if bucket, err := strconv.Atoi(b); err == nil && n > 0 {
				if s.ProcessingTimes == nil {
					s.ProcessingTimes = map[int]int64{}
				}
				s.ProcessingTimes[bucket] = n
			}
		}
	}
	return s, nil
}

// Purge removes every job of the queue in every state and returns how many there were; the
// queue, its settings and its counters stay.
func (s *Store) Purge(ctx context.Context, ns, q string) (int64, error) {
	return s.run(ctx, scriptPurge, s.keys.get(ns, q), "0").Int64()
}

// DeleteQueue removes the queue, its jobs, settings and counters, then its registry entries, and
// returns how many jobs it had.
func (s *Store) DeleteQueue(ctx context.Context, ns, q string) (int64, error) {
	n, err := s.run(ctx, scriptPurge, s.keys.get(ns, q), "1").Int64()
	if err != nil {
		return 0, err
	}
	s.forget(ns, q)
	pipe := s.rdb.Pipeline()
	pipe.SRem(ctx, queuesKey(s.cfg.Prefix, ns), q)
	pipe.SRem(ctx, callbackQueuesKey(s.cfg.Prefix), ns+":"+q)
	if _, err := pipe.Exec(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// Page is a page of jobs and the number of jobs it is a page of.
type Page struct {
	Jobs  []Job
	Total int64
}

// DeadList reads limit dead jobs from offset, oldest first, and the size of the dead letter.
func (s *Store) DeadList(ctx context.Context, ns, q string, offset, limit int) (Page, error) {
	f, err := s.run(ctx, scriptDeadList, s.keys.get(ns, q), offset, limit).Slice()
	if err != nil {
		return Page{}, err
	}
	return parsePage(f)
}

// Pending reads the first limit pending jobs of the queue: ready (consumers' then the callback
// lane's, in the order they are taken), delayed by due time, leased by lease end; and how many
// there are.
func (s *Store) Pending(ctx context.Context, ns, q string, limit int) (Page, error) {
	f, err := s.run(ctx, scriptPending, s.keys.get(ns, q), limit).Slice()
	if err != nil {
		return Page{}, err
	}
	return parsePage(f)
}

// parsePage reads an answer of the total, the number of jobs and the jobs as reply_job writes
// them.
func parsePage(f []any) (Page, error) {
	if len(f) < 2 || len(f) != 2+int(num(f[1]))*fieldsPerJob {
		return Page{}, fmt.Errorf("unexpected reply of %d fields", len(f))
	}
	return Page{Total: num(f[0]), Jobs: parseJobs(f[2:], int(num(f[1])))}, nil
}

// DeadSize is the number of jobs in the dead letter.
func (s *Store) DeadSize(ctx context.Context, ns, q string) (int64, error) {
	return s.rdb.ZCard(ctx, s.keys.get(ns, q).dead()).Result()
}

// DeadRespawn moves dead jobs back to ready with all their tries and a ttl of ttlMs from now (0:
// each job's own), giving back unique keys for uniqueForMs, and returns the ids moved: the given
// ids, or without ids the limit oldest.
func (s *Store) DeadRespawn(ctx context.Context, ns, q string, ttlMs, uniqueForMs int64, limit int, ids []string) ([]string, error) {
	args := append([]any{ttlMs, uniqueForMs}, deadSelection(limit, ids)...)
	return s.run(ctx, scriptDeadRespawn, s.keys.get(ns, q), args...).StringSlice()
}

// DeadDelete removes dead jobs, the given ids or without ids the limit oldest, and returns how
// many.
func (s *Store) DeadDelete(ctx context.Context, ns, q string, limit int, ids []string) (int, error) {
	return s.run(ctx, scriptDeadDelete, s.keys.get(ns, q), deadSelection(limit, ids)...).Int()
}

// deadSelection is the limit argument followed by the ids (dead_respawn.lua, dead_delete.lua).
func deadSelection(limit int, ids []string) []any {
	args := make([]any, 0, 1+len(ids))
	args = append(args, max(limit, 1))
	for _, id := range ids {
		args = append(args, id)
	}
	return args
}
