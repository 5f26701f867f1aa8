package ratelimit

import "github.com/sluicehq/sluice/internal/redisx"

// Every key this package writes is built here. The caller's key is the hash tag, so a limiter
// key, a semaphore and its wake-up channel all live in one Redis Cluster slot.
//
//	<prefix>:ratelimit:<name>:{<key>}          a Limiter's state for one key
//	<prefix>:concurrency:{<key>}               a Concurrency semaphore: lease ids by expiry
//	<prefix>:concurrency:{<key>}:released      its wake-up channel (sharded pub/sub)
//	<prefix>:concurrency:{<key>}:call:<id>     a release call's answer (redisx.OnceKeys), 60 s

func limiterKey(prefix, name, key string) string {
	return prefix + ":ratelimit:" + name + ":{" + key + "}"
}

func semaphoreKey(prefix, key string) string {
	return prefix + ":concurrency:{" + key + "}"
}

// semaphoreCallKey is the call key of a new call of a Once script on the semaphore.
func semaphoreCallKey(prefix, key string) string {
	return semaphoreKey(prefix, key) + ":call:" + redisx.NewCallID()
}

func releasedChannel(prefix, key string) string {
	return semaphoreKey(prefix, key) + ":released"
}
