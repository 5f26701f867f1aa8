package duework

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// On a Cluster the index has a shard per hash slot, and a pass that read all 16,384 of them would
// cost some 22 ms of Redis CPU and a quarter of a second however few things there are. So the
// index keeps the slots in use beside its shards: "<base>:slots", a set of hash slots (decimal)
// whose shard may hold entries. A thing's slot is announced (Announce) where it is registered,
// before any of its scripts can write an entry, and a pass reads only the shards of the slots in
// the set. A slot is never taken out of the set: an entry written after a pass found the shard
// empty would then never be read. The set is so at most the 16,384 slots; an announced slot whose
// shard is empty costs a pass one empty read.
//
// Things registered before the set existed (by a version of Sluice that did not keep it) are
// announced by the sweep of each registry (Sweep), which visits every thing now and then; until a
// sweep has completed once (MarkAnnounced adds the member "complete" to the set), a pass reads
// every shard.

// announcedMark is the member of the slots set that says a sweep has announced every registered
// thing's slot, so a pass may read only the shards of the set.
const announcedMark = "complete"

// SlotsKey is the set of the slots in use of the index base (on a Cluster).
func SlotsKey(base string) string { return base + ":slots" }

// Announce adds the hash slots of keys (a key of each thing, as for Key) to the slots in use of
// the index base, on a Cluster; on a standalone server it does nothing. c may be a pipeline, whose
// Exec then runs it: the caller runs the thing's scripts only after it succeeded.
func Announce(ctx context.Context, c redis.Cmdable, base string, cluster bool, keys ...string) error {
	if !cluster || len(keys) == 0 {
		return nil
	}
	slots := make([]any, len(keys))
	for i, k := range keys {
		slots[i] = strconv.Itoa(redisx.KeySlot(k))
	}
	return c.SAdd(ctx, SlotsKey(base), slots...).Err()
}

// MarkAnnounced records that every thing of the index base's registry has its slot announced: a
// sweep that announced each thing it visited has completed. From then on a pass reads only the
// shards of the slots in use.
func MarkAnnounced(ctx context.Context, c redis.Cmdable, base string, cluster bool) error {
	if !cluster {
		return nil
	}
	return c.SAdd(ctx, SlotsKey(base), announcedMark).Err()
}

// shardsOf are the shards of the index base to read, given the members of its slots set: those of
// the slots in use, or every shard while the set is not marked announced.
func shardsOf(base string, members []string) []string {
	tags := slotTags()
	marked := false
	out := make([]string, 0, len(members))
	for _, m := range members {
		if m == announcedMark {
			marked = true
			continue
		}
		if slot, err := strconv.Atoi(m); err == nil && slot >= 0 && slot < len(tags) {
			out = append(out, base+":{"+tags[slot]+"}")
		}
	}
	if !marked {
		return allShards(base)
	}
	return out
}

// allShards are the keys of every shard of a Cluster's index base.
func allShards(base string) []string {
	tags := slotTags()
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = base + ":{" + t + "}"
	}
	return out
}

// timeAndShards reads Redis's time (ms) and the shards of the index base a pass reads, in one
// round trip.
func timeAndShards(ctx context.Context, rdb redis.UniversalClient, base string, cluster bool) (int64, []string, error) {
	if !cluster {
		t, err := rdb.Time(ctx).Result()
		if err != nil {
			return 0, nil, fmt.Errorf("read Redis's time: %w", err)
		}
		return t.UnixMilli(), []string{base}, nil
	}
	pipe := rdb.Pipeline()
	t := pipe.Time(ctx)
	slots := pipe.SMembers(ctx, SlotsKey(base))
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, nil, fmt.Errorf("read Redis's time and the slots in use of the due index: %w", err)
	}
	return t.Val().UnixMilli(), shardsOf(base, slots.Val()), nil
}
