package callback

import (
	"context"
	"sync"
	"time"
)

// maxCachedSettings bounds the namespaces whose settings one cache keeps: past it the cache
// starts over.
const maxCachedSettings = 4096

// settingsCache keeps namespaces' callback settings for ttl, so a Deliverer (every try) and
// TaskCallbacks (every submit with a callback) do not read Redis each time; a change made with
// Store applies within about ttl.
type settingsCache struct {
	store *Store
	ttl   time.Duration

	mu sync.Mutex
	m  map[string]cachedSettings
}

type cachedSettings struct {
	s  Settings
	at time.Time
}

func newSettingsCache(store *Store, ttl time.Duration) *settingsCache {
	return &settingsCache{store: store, ttl: ttl, m: make(map[string]cachedSettings)}
}

// get returns a namespace's callback settings, read at most ttl ago.
func (c *settingsCache) get(ctx context.Context, ns string) (Settings, error) {
	c.mu.Lock()
	e, ok := c.m[ns]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e.s, nil
	}
	s, err := c.store.Settings(ctx, ns)
	if err != nil {
		return Settings{}, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedSettings {
		clear(c.m)
	}
	c.m[ns] = cachedSettings{s: s, at: time.Now()}
	c.mu.Unlock()
	return s, nil
}
