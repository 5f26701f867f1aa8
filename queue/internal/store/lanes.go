package store

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/duework"
)

// DueLanes returns the queues whose callback lane's entry in the callback lanes' due index is due
// by Redis's clock (laneDueKey), at most limit of each shard, and Redis's time (ms). One TIME and
// one pipelined round trip over the index shards (duework.Due).
func (s *Store) DueLanes(ctx context.Context, limit int) (int64, []QueueName, error) {
	now, members, err := duework.Due(ctx, s.rdb, laneDueBase(s.cfg.Prefix), s.keys.cluster, limit)
	if err != nil {
		return now, nil, err
	}
	return now, s.dueMembers(members), nil
}

// dueMembers reads the queues that entries of a due index name (dueMemberQueue), leaving out any
// member that names none.
func (s *Store) dueMembers(members []string) []QueueName {
	out := make([]QueueName, 0, len(members))
	for _, member := range members {
		if q, ok := dueMemberQueue(s.cfg.Prefix, member); ok {
			out = append(out, q)
		}
	}
	return out
}

// DeferLane moves a callback lane's entry in the lanes' due index to at (Redis's time, ms), when
// the entry is there: a lane whose visit failed is tried again then (duework.Defer).
func (s *Store) DeferLane(ctx context.Context, q QueueName, at int64) error {
	k := s.keys.get(q.Namespace, q.Queue)
	return duework.Defer(ctx, s.rdb, k.laneDue, k.channel, at)
}

// SweepLanes is one step of the sweep that indexes the lanes of the callback registry: it reads
// one page of the registry from cursor (SSCAN, about count queues) and marks each lane due now in
// the lanes' due index, so a deliverer visits it once and its visit sets the entry right. Lanes
// with work stored by a version of Sluice that did not keep the index are found so. It returns
// the cursor of the next page and how many lanes it marked; a step that starts a sweep (cursor 0)
// while one completed within the last every does nothing. The step that ends a sweep (next cursor
// 0) leaves a mark for every (laneSweptKey).
func (s *Store) SweepLanes(ctx context.Context, cursor uint64, count int64, every time.Duration) (uint64, int, error) {
	if cursor == 0 {
		n, err := s.rdb.Exists(ctx, laneSweptKey(s.cfg.Prefix)).Result()
		if err != nil || n == 1 {
			return 0, 0, err
		}
	}
	names, next, err := s.ScanCallbackQueues(ctx, cursor, count)
	if err != nil {
		return cursor, 0, err
	}
	if len(names) > 0 {
		t, err := s.rdb.Time(ctx).Result()
		if err != nil {
			return cursor, 0, err
		}
		now := float64(t.UnixMilli())
		pipe := s.rdb.Pipeline()
		bases := make([]string, len(names))
		for i, q := range names {
			k := s.keys.get(q.Namespace, q.Queue)
			pipe.ZAddArgs(ctx, k.laneDue, redis.ZAddArgs{LT: true, Members: []redis.Z{{Score: now, Member: k.channel}}})
			bases[i] = queueBase(s.cfg.Prefix, q.Namespace, q.Queue)
		}
		// The slots of lanes registered by a version that did not announce them (duework.Announce).
		_ = duework.Announce(ctx, pipe, laneDueBase(s.cfg.Prefix), s.keys.cluster, bases...)
		if _, err := pipe.Exec(ctx); err != nil {
			return cursor, 0, err
		}
	}
	if next == 0 {
		// Every lane's slot is announced now: a read of the index (on a Cluster) visits only the
		// shards of the slots in use, not all 16,384.
		if err := duework.MarkAnnounced(ctx, s.rdb, laneDueBase(s.cfg.Prefix), s.keys.cluster); err != nil {
			return cursor, len(names), err
		}
		if err := s.rdb.Set(ctx, laneSweptKey(s.cfg.Prefix), "1", every).Err(); err != nil {
			return cursor, len(names), err
		}
	}
	return next, len(names), nil
}
