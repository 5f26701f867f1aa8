package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/duework"
)

// Maintained counts what housekeeping did to one queue.
type Maintained struct {
	Promoted int // delayed jobs made ready
	Reaped   int // expired leases handled
	Dropped  int // dead jobs and results trimmed
}

// DueQueues returns the queues whose entry in the due index is due by Redis's clock (some work of
// theirs is due, or maintain.lua left work for another step), at most limit of each shard, and
// Redis's time (ms). Two round trips: Redis's time (with the slots in use on a Cluster), then the
// index shards (duework.Due).
func (s *Store) DueQueues(ctx context.Context, limit int) (int64, []QueueName, error) {
	now, members, err := duework.Due(ctx, s.rdb, dueBase(s.cfg.Prefix), s.keys.cluster, limit)
	if err != nil {
		return now, nil, err
	}
	return now, s.dueMembers(members), nil
}

// DeferDue moves a queue's entry in the due index to at (Redis's time, ms), when the entry is
// there: a queue whose housekeeping failed is tried again then (duework.Defer).
func (s *Store) DeferDue(ctx context.Context, q QueueName, at int64) error {
	k := s.keys.get(q.Namespace, q.Queue)
	return duework.Defer(ctx, s.rdb, k.due(), k.channel, at)
}

// MaintainEach runs one housekeeping step on each queue, pipelined in one round trip: due delayed
// jobs become ready, expired leases are retried or dead-lettered, expired jobs go, the dead letter
// and results are trimmed, each by at most Config.Batch jobs, and the queue's entry in the due
// index moves to its next due time. It returns what each step did and its error (nil when it
// succeeded): one queue's failure does not stop the others.
func (s *Store) MaintainEach(ctx context.Context, queues []QueueName) ([]Maintained, []error) {
	calls := make([]scriptCall, len(queues))
	for i, q := range queues {
		calls[i] = scriptCall{script: scriptMaintain, keys: s.keys.get(q.Namespace, q.Queue)}
	}
	done := make([]Maintained, len(queues))
	errs := make([]error, len(queues))
	sent := s.clocks.micros()
	cmds, err := s.runMany(ctx, calls)
	for i, q := range queues {
		if err != nil {
			errs[i] = err
			continue
		}
		f, err := cmds[i].Slice()
		if err == nil && len(f) < 5 {
			err = fmt.Errorf("unexpected reply of %d fields", len(f))
		}
		if err != nil {
			errs[i] = fmt.Errorf("%s/%s: %w", q.Namespace, q.Queue, err)
			continue
		}
		// Redis's time in the answer is a new reading of its server's clock (clock.go).
		s.clocks.learn(ctx, calls[i].keys.jobs(), num(f[4]), sent)
		done[i] = Maintained{Promoted: int(num(f[0])), Reaped: int(num(f[1])), Dropped: int(num(f[2]))}
	}
	return done, errs
}

// IndexSwept reports whether a sweep of the registry has indexed every queue lately (dueSweptKey).
func (s *Store) IndexSwept(ctx context.Context) (bool, error) {
	n, err := s.rdb.Exists(ctx, dueSweptKey(s.cfg.Prefix)).Result()
	return n == 1, err
}

// MarkIndexSwept records that a sweep of the registry is complete, for the next every: every
// registered queue has been indexed and its slot announced (AnnounceQueues).
func (s *Store) MarkIndexSwept(ctx context.Context, every time.Duration) error {
	if err := duework.MarkAnnounced(ctx, s.rdb, dueBase(s.cfg.Prefix), s.keys.cluster); err != nil {
		return err
	}
	return s.rdb.Set(ctx, dueSweptKey(s.cfg.Prefix), "1", every).Err()
}

// AnnounceQueues adds the hash slots of queues to the slots in use of the due index (on a
// Cluster; duework.Announce): a sweep does it for the queues it visits, which a version of Sluice
// that did not keep the slots in use registered.
func (s *Store) AnnounceQueues(ctx context.Context, queues []QueueName) error {
	keys := make([]string, len(queues))
	for i, q := range queues {
		keys[i] = queueBase(s.cfg.Prefix, q.Namespace, q.Queue)
	}
	return duework.Announce(ctx, s.rdb, dueBase(s.cfg.Prefix), s.keys.cluster, keys...)
}

// ScanNamespaces reads one page of the namespaces that have queues (SSCAN): about count names and
// the cursor of the next page, 0 after the last.
func (s *Store) ScanNamespaces(ctx context.Context, cursor uint64, count int64) ([]string, uint64, error) {
	return s.rdb.SScan(ctx, namespacesKey(s.cfg.Prefix), cursor, "", count).Result()
}

// ScanQueues reads one page of the queues of a namespace (SSCAN), as ScanNamespaces.
func (s *Store) ScanQueues(ctx context.Context, ns string, cursor uint64, count int64) ([]string, uint64, error) {
	return s.rdb.SScan(ctx, queuesKey(s.cfg.Prefix, ns), cursor, "", count).Result()
}
