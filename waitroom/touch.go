package waitroom

import (
	"sync"
	"time"
)

// maxTouchEntries bounds a touchCache: past it the cache starts over (the cost is one early touch
// per visitor).
const maxTouchEntries = 100_000

// touchCache remembers when this process last told Redis that a visitor is still here, so
// requests with a pass touch at most once per interval.
type touchCache struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func newTouchCache() touchCache { return touchCache{last: make(map[string]time.Time)} }

// due reports whether the visitor should be touched now, and if so, claims the touch (so
// concurrent requests of one visitor do not all touch).
func (c *touchCache) due(visitor string, now time.Time, interval time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.last[visitor]; ok && now.Sub(t) < interval {
		return false
	}
	c.setLocked(visitor, now)
	return true
}

func (c *touchCache) mark(visitor string, now time.Time) {
	c.mu.Lock()
	c.setLocked(visitor, now)
	c.mu.Unlock()
}

func (c *touchCache) setLocked(visitor string, now time.Time) {
	if len(c.last) >= maxTouchEntries {
		clear(c.last)
	}
	c.last[visitor] = now
}

func (c *touchCache) forget(visitor string) {
	c.mu.Lock()
	delete(c.last, visitor)
	c.mu.Unlock()
}
