package store

import (
	"strconv"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/redisx"
)

// queueKeys are the Redis keys of one queue, in the order every script receives them (lib.lua).
// All share the hash tag {ns:queue}, so every script runs on Redis Cluster, but the last: the due
// index shard the queue's entry lives in, which is in the queue's hash slot (dueKey).
type queueKeys struct {
	all     []string
	channel string
	// head is what every script call on the queue starts its arguments with: the number of keys,
	// the keys and the channel (the first ARGV), as the interface values a command is made of,
	// so a call does not convert (and allocate) each of them again.
	head []any
	// ackHead and batchHead start ack_noresult.lua and publish_batch.lua calls the same way: their
	// five keys, boxed once.
	ackHead, batchHead []any
	// laneDue is the shard of the callback lanes' due index the queue's entry lives in
	// (laneDueKey); the scripts derive it from the due shard's name.
	laneDue string
	// callPrefix starts the call keys of the queue's Once scripts (redisx.OnceKeys): the prefix
	// and a call id name the key that keeps one call's answer for a repeat of it.
	callPrefix string
}

// HashTag is the hash tag every key of a queue carries, "{ns:queue}"; the callback channel's
// messages name a queue by it (ParseHashTag).
func HashTag(ns, name string) string { return "{" + ns + ":" + name + "}" }

// ParseHashTag returns the queue a hash tag names ("{ns:queue}", as the scripts announce callback
// work on CallbackChannel). It does not check the names.
func ParseHashTag(tag string) (QueueName, bool) {
	inner, ok := strings.CutPrefix(tag, "{")
	if !ok {
		return QueueName{}, false
	}
	inner, ok = strings.CutSuffix(inner, "}")
	if !ok {
		return QueueName{}, false
	}
	ns, q, ok := strings.Cut(inner, ":")
	return QueueName{Namespace: ns, Queue: q}, ok
}

func newQueueKeys(prefix, ns, name string, cluster bool) queueKeys {
	base := queueBase(prefix, ns, name)
	k := queueKeys{
		all: []string{
			base + "jobs",
			base + "ready:",
			base + "prios",
			base + "delayed",
			base + "leased",
			base + "expiry",
			base + "dead",
			base + "done",
			base + "stats",
			base + "meta",
			base + "u:",
			base + "lease",
			dueKey(prefix, base, cluster),
		},
		// publish_ready.lua finds the channel from the jobs key: the same name, "notify" for "jobs".
		channel:    base + "notify",
		callPrefix: base + "call:",
		laneDue:    laneDueKey(prefix, base, cluster),
	}
	k.head = make([]any, 0, 2+len(k.all))
	k.head = append(k.head, len(k.all))
	for _, key := range k.all {
		k.head = append(k.head, key)
	}
	k.head = append(k.head, k.channel)
	k.ackHead = []any{5, k.jobs(), k.lease(), k.leased(), k.stats(), k.unique()}
	k.batchHead = []any{6, k.jobs(), k.all[1], k.prios(), k.all[5], k.stats(), k.due()}
	return k
}

func (k queueKeys) jobs() string   { return k.all[0] }
func (k queueKeys) dead() string   { return k.all[6] }
func (k queueKeys) prios() string  { return k.all[2] }
func (k queueKeys) leased() string { return k.all[4] }
func (k queueKeys) stats() string  { return k.all[8] }
func (k queueKeys) meta() string   { return k.all[9] }
func (k queueKeys) unique() string { return k.all[10] }
func (k queueKeys) lease() string  { return k.all[11] }
func (k queueKeys) due() string    { return k.all[12] }

// call is the call key of a new call of a Once script on the queue, with a new call id.
func (k queueKeys) call() string { return k.callPrefix + redisx.NewCallID() }

// readyList is the ready list of priority pri (lib.lua names it KEYS[2]..pri). The name ends
// with the priority: publish_ready.lua reads it from there.
func (k queueKeys) readyList(pri int64) string { return k.all[1] + strconv.FormatInt(pri, 10) }

// maxCachedKeys bounds keyCache: past it the cache starts over.
const maxCachedKeys = 4096

// keyCache keeps the keys of the queues a Store used lately: building them is 14 allocations,
// and every publish, consume and ack names a queue. The keys are only read once built.
type keyCache struct {
	prefix  string
	cluster bool // the due index has a shard per hash slot (dueKey)
	mu      sync.RWMutex
	m       map[QueueName]queueKeys
}

// QueueName names one queue.
type QueueName struct{ Namespace, Queue string }

func newKeyCache(prefix string, cluster bool) *keyCache {
	return &keyCache{prefix: prefix, cluster: cluster, m: make(map[QueueName]queueKeys)}
}

func (c *keyCache) get(ns, q string) queueKeys {
	name := QueueName{ns, q}
	c.mu.RLock()
	k, ok := c.m[name]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = newQueueKeys(c.prefix, ns, q, c.cluster)
	c.mu.Lock()
	if len(c.m) >= maxCachedKeys {
		clear(c.m)
	}
	c.m[name] = k
	c.mu.Unlock()
	return k
}

// callbackQueuesKey is the set of queues ("ns:q") that have had callback jobs, so deliverers visit
// those and not every queue. A queue joins before its first callback job is written (like the
// queue registry) and leaves when it is deleted.
func callbackQueuesKey(prefix string) string { return prefix + ":callbacks:queues" }

// callbackChannel is where scripts announce callback work (flush_notify in lib.lua builds the same
// name); the message is the queue's hash tag, "{ns:q}".
func callbackChannel(prefix string) string { return prefix + ":callbacks:notify" }

// dueKey is the shard of the due index (duework) that holds the entry of the queue whose keys
// start with base: a zset of queues (member: the queue's notify channel, which names it) scored by
// the time (ms) its next delayed job, lease end, ttl or retention end is due, at or before it. The
// scripts that make such work lower the entry in the same call; maintain.lua sets it to the
// queue's next due time, or removes it. "<prefix>:due", or on a Cluster the shard
// "<prefix>:due:{t}" in the queue's hash slot.
func dueKey(prefix, queueBase string, cluster bool) string {
	return duework.Key(dueBase(prefix), queueBase, cluster)
}

// queueBase starts the keys of a queue: "<prefix>:{ns:q}:".
func queueBase(prefix, ns, q string) string { return prefix + ":" + HashTag(ns, q) + ":" }

// dueBase names the due index of the queues (duework.Due).
func dueBase(prefix string) string { return prefix + ":due" }

// dueMemberQueue reads the queue an entry of the due index names: the member is the queue's notify
// channel, "<prefix>:{ns:q}:notify".
func dueMemberQueue(prefix, member string) (QueueName, bool) {
	tag, ok := strings.CutPrefix(member, prefix+":")
	if !ok {
		return QueueName{}, false
	}
	if tag, ok = strings.CutSuffix(tag, ":notify"); !ok {
		return QueueName{}, false
	}
	return ParseHashTag(tag)
}

// laneDueKey is the shard of the callback lanes' due index that holds the entry of the queue whose
// keys start with base: a zset of queues (member: the queue's notify channel, as in the due index)
// scored at or before the time the queue's callback lane next has work for a deliverer (a job on
// the lane, a delayed callback job, a lease end). The scripts that put a callback job on the lane
// or schedule one lower the entry in the same call; consume_callbacks.lua sets it to the lane's
// next work, or removes it. "<prefix>:callbacks:due", or on a Cluster the shard
// "<prefix>:callbacks:due:{t}" of the queue's hash slot, the same tag as the due index's (lib.lua
// derives it from that one's name: lane_key).
func laneDueKey(prefix, queueBase string, cluster bool) string {
	return duework.Key(laneDueBase(prefix), queueBase, cluster)
}

// laneDueBase names the callback lanes' due index (duework.Shards).
func laneDueBase(prefix string) string { return prefix + ":callbacks:due" }

// laneSweptKey exists while the callback lanes' due index is known to hold every lane of the
// callback registry with work: a full sweep of the registry (Store.SweepLanes) sets it with a
// lifetime, as dueSweptKey.
func laneSweptKey(prefix string) string { return prefix + ":callbacks:due:swept" }

// dueSweptKey exists while the due index is known to hold every queue of the registry: a full
// sweep (one maintenance step per registered queue, in small batches) sets it with a lifetime, so
// sweeps recur now and then and index what an older version of Sluice (which did not keep the
// index) stored meanwhile.
func dueSweptKey(prefix string) string { return prefix + ":due:swept" }

// namespacesKey is the set of namespaces that have queues.
func namespacesKey(prefix string) string { return prefix + ":namespaces" }

// queuesKey is the set of queue names of a namespace.
func queuesKey(prefix, ns string) string { return prefix + ":ns:" + ns + ":queues" }

// Channel is the Pub/Sub channel on which the queue's scripts announce ready jobs: what a blocked
// consumer of the queue listens on.
func (s *Store) Channel(ns, q string) string { return s.keys.get(ns, q).channel }

// CallbackChannel is the Pub/Sub channel on which the scripts announce callback work; a message
// is the hash tag of the queue concerned (ParseHashTag).
func (s *Store) CallbackChannel() string { return callbackChannel(s.cfg.Prefix) }

// uniqueKey is the string holding the id of the job that holds unique key u (K_UNIQUE..u in
// lib.lua).
func (k queueKeys) uniqueKey(u string) string { return k.unique() + u }

// tries is the list of a callback job's tries (callback_finish.lua), newest first.
func (k queueKeys) tries(id string) string { return k.all[0] + ":tries:" + id }

// withTries is the queue's keys with the list of tries of job id after them (KEYS[14] of
// callback_finish.lua).
func (k queueKeys) withTries(id string) queueKeys {
	out := k
	out.all = append(k.all[:len(k.all):len(k.all)], k.tries(id))
	out.head = make([]any, 0, 2+len(out.all))
	out.head = append(out.head, len(out.all))
	for _, key := range out.all {
		out.head = append(out.head, key)
	}
	out.head = append(out.head, out.channel)
	return out
}

// jobsKey is the job hash of queue q of namespace ns (queueKeys.jobs), for reading a namespace's
// usage without filling the key cache with every one of its queues.
func jobsKey(prefix, ns, q string) string { return prefix + ":" + HashTag(ns, q) + ":jobs" }
