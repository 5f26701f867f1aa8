package ratelimit

// Every key this package writes is built here. The caller's key is the hash tag, so a limiter
// key, a semaphore and its wake-up channel all live in one Redis Cluster slot.
//
//	<prefix>:ratelimit:<name>:{<key>}          a Limiter's state for one key
//	<prefix>:concurrency:{<key>}               a Concurrency semaphore: lease ids by expiry
//	<prefix>:concurrency:{<key>}:released      its wake-up channel (sharded pub/sub)

func limiterKey(prefix, name, key string) string {
	return prefix + ":ratelimit:" + name + ":{" + key + "}"
}

func semaphoreKey(prefix, key string) string {
	return prefix + ":concurrency:{" + key + "}"
}

func releasedChannel(prefix, key string) string {
	return semaphoreKey(prefix, key) + ":released"
}
