package queue

import "strings"

// queueKeys are the Redis keys of one queue, in the order every script receives them (lib.lua).
// All share the hash tag {ns:queue}, so every script runs on Redis Cluster.
type queueKeys struct {
	all     []string
	channel string
}

func newQueueKeys(prefix, ns, name string) queueKeys {
	base := prefix + ":{" + ns + ":" + name + "}:"
	return queueKeys{
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
		},
		channel: base + "notify",
	}
}

func (k queueKeys) meta() string { return k.all[9] }

// namespacesKey is the set of namespaces that have queues.
func namespacesKey(prefix string) string { return prefix + ":namespaces" }

// queuesKey is the set of queue names of a namespace.
func queuesKey(prefix, ns string) string { return prefix + ":ns:" + ns + ":queues" }

// nameRule is the rule for namespace, queue and prefix names (lmstfy's, so its clients fit).
const nameRule = "must match ^[-_A-Za-z0-9]+$ and be at most 255 bytes"

func validName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_'
	}) < 0
}
