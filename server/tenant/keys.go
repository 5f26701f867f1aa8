package tenant

// keys are the Redis keys of tenancy, all under the server's prefix. The hashes are written one
// command at a time; a namespace's token index is written with the token hash in one script, so
// its name carries the token hash's whole name as its hash tag: "{prefix:auth:tokens}:ns:<ns>"
// lands in the slot of "prefix:auth:tokens" on Redis Cluster.
type keys struct {
	// namespaces is a hash: namespace name -> Namespace JSON.
	namespaces string
	// tokens is a hash: token id -> token record JSON (the secret's SHA-256, never the secret).
	tokens string
	// limits is a hash: "namespace/token id" -> Limit JSON.
	limits string
	// quotas is a hash: namespace -> QuotaSettings JSON.
	quotas string
	// deletions is a hash of the namespace deletions in progress (DeletionStore).
	deletions string
}

func newKeys(prefix string) keys {
	return keys{
		namespaces: prefix + ":auth:namespaces",
		tokens:     prefix + ":auth:tokens",
		limits:     prefix + ":auth:limits",
		quotas:     prefix + ":auth:quotas",
		deletions:  prefix + ":auth:deletions",
	}
}

// limitField is the field of a token's limit in keys.limits, and the key of its rate limiter.
func limitField(ns, id string) string { return ns + "/" + id }

// tokenIndex is the sorted set of namespace ns's tokens: score 0, member "<created ms>:<id>"
// (tokenIndexMember), so that lexical order is creation order and a page starts after a member.
func (k keys) tokenIndex(ns string) string { return "{" + k.tokens + "}:ns:" + ns }

// deletionLease is the key an instance holds while it works on namespace ns's deletion.
func (k keys) deletionLease(ns string) string { return k.deletions + ":lease:" + ns }
