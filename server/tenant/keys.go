package tenant

// keys are the Redis keys of tenancy, all under the server's prefix. They are plain hashes
// written one command at a time, so they need no shared hash tag.
type keys struct {
	// namespaces is a hash: namespace name -> Namespace JSON.
	namespaces string
	// tokens is a hash: token id -> token record JSON (the secret's SHA-256, never the secret).
	tokens string
	// limits is a hash: "namespace/token id" -> Limit JSON.
	limits string
}

func newKeys(prefix string) keys {
	return keys{
		namespaces: prefix + ":auth:namespaces",
		tokens:     prefix + ":auth:tokens",
		limits:     prefix + ":auth:limits",
	}
}

// limitField is the field of a token's limit in keys.limits, and the key of its rate limiter.
func limitField(ns, id string) string { return ns + "/" + id }
