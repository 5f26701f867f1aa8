// Package duework is maintenance by due work, not by registered things: an index of what has
// work due, kept by the scripts that make the work, so a maintenance pass visits only what is due,
// in bounded batches, and never touches the idle. It serves the queues, the relay's endpoints and
// the waiting rooms alike.
//
// The index is a zset: member the name of a thing (a queue, an endpoint, a room), score the time
// (ms, Redis's clock) its next work is due, at or before it. A script that makes timed work lowers
// the entry in the same call (ZADD LT); the thing's housekeeping sets it to its next due time, or
// removes it. On a standalone server one key holds every entry. On a Cluster a script reaches only
// keys of one hash slot, so the index has a shard per slot, "<base>:{t}" with t a tag that hashes
// to the slot (Key), and a pass reads the shards of the slots in use (slots.go, Due).
package duework

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/redisx"

	"github.com/redis/go-redis/v9"
)

// IsCluster reports whether rdb talks to a Redis Cluster (the index then has a shard per slot).
func IsCluster(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// Key is the shard of the index base that holds the entry of a thing whose keys carry the hash
// tag of key (any of its keys): base itself on a standalone server, the shard in the same hash
// slot on a Cluster, so the thing's scripts may write it.
func Key(base, key string, cluster bool) string {
	if !cluster {
		return base
	}
	return base + ":{" + slotTags()[redisx.KeySlot(key)] + "}"
}

// Due returns the members of the index base due by Redis's clock, at most limit of each shard it
// reads, and Redis's time (ms): on a standalone server one key, on a Cluster the shards of the
// slots in use (slots.go). Two round trips.
func Due(ctx context.Context, rdb redis.UniversalClient, base string, cluster bool, limit int) (int64, []string, error) {
	now, shards, err := timeAndShards(ctx, rdb, base, cluster)
	if err != nil {
		return 0, nil, err
	}
	if len(shards) == 0 {
		return now, nil, nil
	}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(shards))
	by := &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now, 10), Count: int64(limit)}
	for i, shard := range shards {
		cmds[i] = pipe.ZRangeByScore(ctx, shard, by)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return now, nil, fmt.Errorf("read the due index: %w", err)
	}
	var out []string
	for _, cmd := range cmds {
		out = append(out, cmd.Val()...)
	}
	return now, out, nil
}

// Defer moves member's entry in shard to at (Redis's time, ms), when the entry is there: a thing
// whose housekeeping failed is tried again then, and meanwhile does not stand at the head of its
// shard in front of the others. A script that makes earlier work meanwhile may see its entry moved
// later; the next try sets it right.
func Defer(ctx context.Context, rdb redis.UniversalClient, shard, member string, at int64) error {
	return rdb.ZAddXX(ctx, shard, redis.Z{Score: float64(at), Member: member}).Err()
}

// The backoff of a thing whose housekeeping fails: the first retry after RetryMin, doubling with
// each failure in a row up to RetryMax.
const (
	RetryMin = time.Second
	RetryMax = time.Minute
)

// maxTracked bounds the failing things a Backoff remembers; past it the count starts over.
const maxTracked = 10000

// Backoff counts the failures in a row of each thing whose housekeeping fails, for its backoff.
// The zero value is ready; it is safe for concurrent use.
type Backoff[K comparable] struct {
	mu       sync.Mutex
	failures map[K]int
}

// Succeeded forgets k's failures.
func (b *Backoff[K]) Succeeded(k K) {
	b.mu.Lock()
	delete(b.failures, k)
	b.mu.Unlock()
}

// Failed counts one more failure of k in a row and returns the count and the wait before its
// next try.
func (b *Backoff[K]) Failed(k K) (int, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures == nil || len(b.failures) >= maxTracked {
		b.failures = make(map[K]int)
	}
	b.failures[k]++
	n := b.failures[k]
	return n, min(RetryMin<<min(n-1, 16), RetryMax)
}

// Fail handles a failure err of the housekeeping of k, whose entry is member of shard: it counts
// the failure, moves the entry to the next try (now, Redis's time in ms, plus the backoff; Defer)
// and returns that time and err with the count and the wait, for the log.
func (b *Backoff[K]) Fail(ctx context.Context, rdb redis.UniversalClient, k K, shard, member string, now int64, err error) (int64, error) {
	n, wait := b.Failed(k)
	at := now + wait.Milliseconds()
	err = fmt.Errorf("failure %d in a row, next try in %s: %w", n, wait, err)
	if derr := Defer(ctx, rdb, shard, member, at); derr != nil {
		err = errors.Join(err, derr)
	}
	return at, err
}
