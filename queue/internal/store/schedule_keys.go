package store

import (
	"hash/crc32"
	"strconv"
)

// The keys of schedules. A schedule lives beside the queue its jobs go to, under the queue's hash
// tag, so the script that fires a tick publishes the tick's job and advances the schedule in one
// atomic call on Redis Cluster too. Two indexes find schedules without scanning: the namespace's
// hash of schedule names (name -> queue), and the due index, a zset of queues by the time their
// earliest schedule is due, split in DueShards shards of hash tags of their own so that it
// spreads over a Cluster's nodes.

// DueShards is the number of shards of the due index. Every process must agree on it.
const DueShards = 8

// scheduleKeys are the keys of one schedule and of its queue's schedule indexes.
type scheduleKeys struct {
	hash   string // the schedule: definition, version, next run, counters
	due    string // the queue's zset of schedule names by next run (paused ones are not in it)
	names  string // the queue's set of schedule names
	prefix string // the prefix of the queue's schedule hashes: hash = prefix + name
}

func newScheduleKeys(prefix, ns, q, name string) scheduleKeys {
	base := prefix + ":" + HashTag(ns, q) + ":"
	return scheduleKeys{
		hash:   base + "sched:" + name,
		due:    base + "sched_due",
		names:  base + "sched_names",
		prefix: base + "sched:",
	}
}

// withKeys returns the queue's keys with more keys after them (same hash tag): KEYS[14] on of a
// script that binds the queue's keys (lib.lua) and reads these too.
func (k queueKeys) withKeys(extra ...string) queueKeys {
	all := append(append(make([]string, 0, len(k.all)+len(extra)), k.all...), extra...)
	head := make([]any, 0, 2+len(all))
	head = append(head, len(all))
	for _, key := range all {
		head = append(head, key)
	}
	head = append(head, k.channel)
	return queueKeys{all: all, channel: k.channel, head: head}
}

// namespaceSchedulesKey is the hash of a namespace's schedules: name -> queue.
func namespaceSchedulesKey(prefix, ns string) string { return prefix + ":ns:" + ns + ":schedules" }

// dueMember names a queue in the due index: "ns:q" (names hold no colon).
func dueMember(ns, q string) string { return ns + ":" + q }

// dueShardKeys are the zset and the hash of generations of one shard of the due index.
func dueShardKeys(prefix string, shard int) (zset, gens string) {
	base := prefix + ":schedules:{due-" + strconv.Itoa(shard) + "}:"
	return base + "queues", base + "gens"
}

// dueShardOf is the shard of the due index that holds a queue.
func dueShardOf(member string) int {
	return int(crc32.ChecksumIEEE([]byte(member)) % DueShards)
}
