package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/duework"
)

// registerEvery is how often a process re-adds a queue it publishes to to the registry, so a queue
// deleted while a producer runs comes back for the maintenance loop.
const registerEvery = time.Minute

// ErrQueueQuota is Register's answer when the namespace holds its quota of queues already.
var ErrQueueQuota = errors.New("store: the namespace holds its quota of queues")

// Register adds a queue to its namespace's registry before the first publish, so maintenance and
// Queues find it, and, for a publish with callback jobs (callbacks), to the callback registry, so
// deliverers find it. It runs before the job is written: a crash in between leaves an empty queue
// registered, never a job in an unregistered queue. A process registers a queue once a minute at
// most (registerEvery). With quota set, a queue new to the namespace is added by register.lua,
// which refuses it (ErrQueueQuota, with the quota) when the namespace holds quota() queues.
func (s *Store) Register(ctx context.Context, ns, q string, callbacks bool, quota func() (int64, error)) (int64, error) {
	key := QueueName{ns, q}
	s.registeredMu.Lock()
	last, ok := s.registered[key]
	lastCb, okCb := s.registeredCallbacks[key]
	s.registeredMu.Unlock()
	needQueue := !ok || time.Since(last) >= registerEvery
	needCb := callbacks && (!okCb || time.Since(lastCb) >= registerEvery)
	if !needQueue && !needCb {
		return 0, nil
	}
	pipe := s.rdb.Pipeline()
	if quota != nil && needQueue {
		max, err := quota()
		if err != nil {
			return 0, err
		}
		if max > 0 {
			n, err := s.scripts.Run(ctx, registerScript, []string{queuesKey(s.cfg.Prefix, ns)}, q, max).Int64()
			if err != nil {
				return 0, err
			}
			if n < 0 {
				return max, ErrQueueQuota
			}
		}
	}
	pipe.SAdd(ctx, namespacesKey(s.cfg.Prefix), ns)
	pipe.SAdd(ctx, queuesKey(s.cfg.Prefix, ns), q)
	// The queue's slot is in use before its first job is written (duework.Announce).
	_ = duework.Announce(ctx, pipe, dueBase(s.cfg.Prefix), s.keys.cluster, queueBase(s.cfg.Prefix, ns, q))
	if callbacks {
		pipe.SAdd(ctx, callbackQueuesKey(s.cfg.Prefix), ns+":"+q)
		// So is its callback lane's, in the lanes' due index.
		_ = duework.Announce(ctx, pipe, laneDueBase(s.cfg.Prefix), s.keys.cluster, queueBase(s.cfg.Prefix, ns, q))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	now := time.Now()
	s.registeredMu.Lock()
	s.registered[key] = now
	if callbacks {
		s.registeredCallbacks[key] = now
	}
	s.registeredMu.Unlock()
	return 0, nil
}

// forget drops what this process remembers of registering a queue (the queue was deleted).
func (s *Store) forget(ns, q string) {
	s.registeredMu.Lock()
	delete(s.registered, QueueName{ns, q})
	delete(s.registeredCallbacks, QueueName{ns, q})
	s.registeredMu.Unlock()
}

// Namespaces lists the namespaces that have queues, in no order.
func (s *Store) Namespaces(ctx context.Context) ([]string, error) {
	return s.rdb.SMembers(ctx, namespacesKey(s.cfg.Prefix)).Result()
}

// Queues lists the queues of a namespace, in no order.
func (s *Store) Queues(ctx context.Context, ns string) ([]string, error) {
	return s.rdb.SMembers(ctx, queuesKey(s.cfg.Prefix, ns)).Result()
}

// QueueExists reports whether the queue is registered in its namespace. One SISMEMBER.
func (s *Store) QueueExists(ctx context.Context, ns, q string) (bool, error) {
	return s.rdb.SIsMember(ctx, queuesKey(s.cfg.Prefix, ns), q).Result()
}

// ForgetNamespace removes the namespace and its list of queues from the registry (its queues are
// deleted first, with DeleteQueue).
func (s *Store) ForgetNamespace(ctx context.Context, ns string) error {
	pipe := s.rdb.Pipeline()
	pipe.SRem(ctx, namespacesKey(s.cfg.Prefix), ns)
	pipe.Del(ctx, queuesKey(s.cfg.Prefix, ns))
	_, err := pipe.Exec(ctx)
	return err
}

// CallbackQueues lists the queues that have had callback jobs, in no order.
func (s *Store) CallbackQueues(ctx context.Context) ([]QueueName, error) {
	members, err := s.rdb.SMembers(ctx, callbackQueuesKey(s.cfg.Prefix)).Result()
	if err != nil {
		return nil, err
	}
	return callbackQueueNames(members), nil
}

// ScanCallbackQueues reads one page of the queues that have had callback jobs (SSCAN): about
// count of them and the cursor of the next page, 0 after the last.
func (s *Store) ScanCallbackQueues(ctx context.Context, cursor uint64, count int64) ([]QueueName, uint64, error) {
	members, next, err := s.rdb.SScan(ctx, callbackQueuesKey(s.cfg.Prefix), cursor, "", count).Result()
	return callbackQueueNames(members), next, err
}

// callbackQueueNames reads the members of the callback registry, "ns:q".
func callbackQueueNames(members []string) []QueueName {
	out := make([]QueueName, 0, len(members))
	for _, m := range members {
		if ns, q, ok := strings.Cut(m, ":"); ok {
			out = append(out, QueueName{Namespace: ns, Queue: q})
		}
	}
	return out
}

// Pause stops consumers from getting jobs of the queue (the scripts read the flag).
func (s *Store) Pause(ctx context.Context, ns, q string) error {
	return s.rdb.HSet(ctx, s.keys.get(ns, q).meta(), "paused", "1").Err()
}

// Resume lets consumers get jobs of a paused queue again, wakes the ones waiting, and marks the
// queue's callback lane due when jobs wait on it (resume.lua).
func (s *Store) Resume(ctx context.Context, ns, q string) error {
	return s.run(ctx, scriptResume, s.keys.get(ns, q)).Err()
}
