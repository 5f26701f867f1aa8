package relay

import (
	"encoding/hex"
	"strconv"
	"sync"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/internal/redisx"
)

// endpointKeys are the Redis keys of one endpoint, in the order every endpoint script receives
// them (lua/lib.lua). All share the hash tag {ep:<name>}, so every script runs on Redis Cluster,
// but the last: the shard of the due index that holds the endpoint's entry, which is in the
// endpoint's hash slot (duework.Key). A task's id names its endpoint, so a task's hash is found
// from its id alone.
type endpointKeys struct {
	all  []string
	idem string // prefix of the idempotency records: idem + hex(scope hash)
	// calls starts the call keys of the Once scripts (redisx.OnceKeys): calls + a call id names
	// the key that keeps one call's answer for a repeat of it.
	calls string
}

func newEndpointKeys(prefix, endpoint string, cluster bool) endpointKeys {
	base := prefix + ":relay:{ep:" + endpoint + "}:"
	return endpointKeys{idem: base + "idem:", calls: base + "call:", all: []string{
		base + "queue",
		base + "wait",
		base + "delayed",
		base + "running",
		base + "subjects",
		base + "seq",
		base + "rate",
		base + "ring",
		base + "counts",
		base + "archive",
		base + "t:",
		base + "starts",
		base + "slots",
		base + "fair",
		base + "completions",
		duework.Key(dueBase(prefix), base, cluster),
	}}
}

// dueBase names the due index of the endpoints (duework): member the endpoint's name, score when
// its next lease, permit, slot or queue deadline ends, or its finished tasks are due to be
// archived, handed on or trimmed, at or before it. The scripts that make such work lower the entry
// in the same call; maintain.lua sets it to the next due time, or removes it.
func dueBase(prefix string) string { return prefix + ":relay:due" }

func (k endpointKeys) task(id string) string { return k.all[10] + id }

// call is the call key of a new call of a Once script on the endpoint, with a new call id.
func (k endpointKeys) call() string        { return k.calls + redisx.NewCallID() }
func (k endpointKeys) archive() string     { return k.all[9] }
func (k endpointKeys) completions() string { return k.all[14] }
func (k endpointKeys) due() string         { return k.all[15] }

// idempotency is the key of the record of one idempotency key: a hash (id, h, pri, ca) that
// names the task the key first created. It lives under the endpoint's hash tag, so submit.lua
// checks it and creates the task in one script on Redis Cluster too. scope is the SHA-256 of the
// submitter's identity and the key (idempotencyScope), so a key of any length makes a short name.
func (k endpointKeys) idempotency(scope [32]byte) string {
	return k.idem + hex.EncodeToString(scope[:])
}

// registryKeys are the keys of the endpoint settings, under the hash tag {relay}.
type registryKeys struct {
	settings string // hash name -> json
	version  string // bumped on every change
	known    string // zset name -> last change (ms)
	applied  string // prefix of applied(version)
	// deleted: zset name -> when to visit (ms) of the deleted endpoints maintenance has not
	// forgotten yet (endpoint_set.lua adds, endpoint_forget.lua removes), visited until empty.
	deleted string
	// swept exists while every endpoint of known has been visited lately, so the due index holds
	// what an older version of Sluice (which did not keep it) stored (Client.sweepPage).
	swept string
}

func newRegistryKeys(prefix string) registryKeys {
	base := prefix + ":relay:{relay}:"
	return registryKeys{settings: base + "endpoints", version: base + "version", known: base + "known", applied: base + "applied:",
		deleted: base + "deleted", swept: base + "due:swept"}
}

// appliedKey is the set of the Clients that applied the change that made version v (short-lived:
// endpoint_applied.lua gives it a TTL).
func (r registryKeys) appliedKey(v int64) string { return r.applied + strconv.FormatInt(v, 10) }

// sharedPermitKeyKey holds the permit key that processes given none share (SharedPermitKey). Its
// name is the one the server first stored it under, kept so that stored keys go on working.
func sharedPermitKeyKey(prefix string) string { return prefix + ":server:relay-permit-key" }

// channels are the Pub/Sub channels of the relay scripts.
type channels struct {
	wake string // payload: endpoint name; a task or a slot became free
	task string // prefix: task channel = task + id; payload: the new status
	// settings: payload the registry version of an endpoint change. It carries the registry's
	// hash tag, so on Redis Cluster every Client subscribes to it on the node that runs
	// endpoint_set.lua, whose PUBLISH then counts them all.
	settings string
}

func newChannels(prefix string) channels {
	return channels{wake: prefix + ":relay:wake", task: prefix + ":relay:task:", settings: prefix + ":relay:{relay}:settings"}
}

// maxCachedKeys bounds keyCache: past it the cache starts over.
const maxCachedKeys = 4096

// keyCache keeps the keys of the endpoints a Client used lately.
type keyCache struct {
	prefix  string
	cluster bool // the due index has a shard per hash slot (duework.Key)
	mu      sync.RWMutex
	m       map[string]endpointKeys
}

func (c *keyCache) get(endpoint string) endpointKeys {
	c.mu.RLock()
	k, ok := c.m[endpoint]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = newEndpointKeys(c.prefix, endpoint, c.cluster)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedKeys {
		c.m = make(map[string]endpointKeys)
	}
	c.m[endpoint] = k
	c.mu.Unlock()
	return k
}

// nameRule is the rule for endpoint names and the key prefix.
const nameRule = "must match ^[-_A-Za-z0-9]+$ and be 1 to 64 bytes"

func validName(s string) bool { return names.Valid(s, 64) }
