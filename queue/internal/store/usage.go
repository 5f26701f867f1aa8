package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// usagePage is how many queues one round trip of Usage measures.
const usagePage = 1000

// Usage measures what namespace ns stores: the jobs its queues hold (HLEN of each job hash) and
// the bytes Redis says those records take (MEMORY USAGE of each job hash, which samples the
// fields of a large hash). It reads the namespace's queue registry in pages (SSCAN) and measures
// each page in one pipelined round trip: two O(1) commands per queue, split across the nodes of
// a Cluster by the client.
func (s *Store) Usage(ctx context.Context, ns string) (jobs, bytes int64, err error) {
	var cursor uint64
	for {
		names, next, err := s.rdb.SScan(ctx, queuesKey(s.cfg.Prefix, ns), cursor, "", usagePage).Result()
		if err != nil {
			return 0, 0, fmt.Errorf("store: usage of %s: %w", ns, err)
		}
		j, b, err := s.measure(ctx, ns, names)
		if err != nil {
			return 0, 0, err
		}
		jobs, bytes = jobs+j, bytes+b
		if cursor = next; cursor == 0 {
			return jobs, bytes, nil
		}
	}
}

// measure sums the jobs and bytes of the named queues of ns, in one pipeline.
func (s *Store) measure(ctx context.Context, ns string, queues []string) (jobs, bytes int64, err error) {
	if len(queues) == 0 {
		return 0, 0, nil
	}
	pipe := s.rdb.Pipeline()
	lens := make([]*redis.IntCmd, len(queues))
	mem := make([]*redis.IntCmd, len(queues))
	for i, q := range queues {
		k := jobsKey(s.cfg.Prefix, ns, q)
		lens[i] = pipe.HLen(ctx, k)
		mem[i] = pipe.MemoryUsage(ctx, k)
	}
	// MEMORY USAGE of a queue with no jobs answers nil (redis.Nil): it stores nothing.
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, fmt.Errorf("store: usage of %s: %w", ns, err)
	}
	for i := range queues {
		for _, cmd := range []*redis.IntCmd{lens[i], mem[i]} {
			if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
				return 0, 0, fmt.Errorf("store: usage of %s: %w", ns, err)
			}
		}
		jobs += lens[i].Val()
		bytes += mem[i].Val()
	}
	return jobs, bytes, nil
}
