package tenant

import (
	"sync"
	"time"
)

// maxCached bounds a lookup cache; a full cache is emptied.
const maxCached = 10_000

// lookupCache keeps the results of Redis lookups (tokens, limits) in-process for at most ttl
// (0 keeps nothing), which bounds how long a change made on another instance takes to apply here.
type lookupCache[V any] struct {
	ttl time.Duration

	mu      sync.Mutex
	entries map[string]cachedLookup[V]
}

type cachedLookup[V any] struct {
	v       V
	found   bool
	expires time.Time
}

func newLookupCache[V any](ttl time.Duration) *lookupCache[V] {
	return &lookupCache[V]{ttl: ttl, entries: make(map[string]cachedLookup[V])}
}

// lookup returns the cached result for key, or calls load and keeps what it finds (or does not
// find) for ttl from the start of the lookup. Errors are not kept.
func (c *lookupCache[V]) lookup(key string, load func() (v V, found bool, err error)) (V, bool, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.v, e.found, nil
	}
	v, found, err := load()
	if err != nil {
		var zero V
		return zero, false, err
	}
	if c.ttl > 0 {
		c.mu.Lock()
		if len(c.entries) >= maxCached {
			clear(c.entries)
		}
		c.entries[key] = cachedLookup[V]{v: v, found: found, expires: now.Add(c.ttl)}
		c.mu.Unlock()
	}
	return v, found, nil
}

// forget drops the cached results for keys, so a change made here applies here at once.
func (c *lookupCache[V]) forget(keys ...string) {
	c.mu.Lock()
	for _, k := range keys {
		delete(c.entries, k)
	}
	c.mu.Unlock()
}

// forgetAll drops every cached result.
func (c *lookupCache[V]) forgetAll() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}
