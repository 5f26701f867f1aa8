package cache

import "sync/atomic"

// Stats counts what a Store did since it was created.
type Stats struct {
	// Hits are Gets (and GetMany keys) answered from the cache, including not-found markers and
	// stale values served during a reload.
	Hits uint64
	// Misses are Gets that found no usable value and went to the load path.
	Misses uint64
	// Loads are loader calls (batch loader calls count once).
	Loads uint64
	// Waits are times a Get waited for another caller's load to land.
	Waits uint64
	// Refreshes are background reloads started (refresh-ahead and stale values).
	Refreshes uint64
	// StaleWritesRejected are write-backs refused because the key was deleted (or its lock taken
	// over) after the load began.
	StaleWritesRejected uint64
	// Degraded are loader calls made without the cache (bypass switch or Redis failing).
	Degraded uint64
	// Errors are Redis command failures and loader failures (ErrNotFound excluded).
	Errors uint64
}

type counters struct {
	hits, misses, loads, waits, refreshes, rejected, degraded, errors atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Hits:                c.hits.Load(),
		Misses:              c.misses.Load(),
		Loads:               c.loads.Load(),
		Waits:               c.waits.Load(),
		Refreshes:           c.refreshes.Load(),
		StaleWritesRejected: c.rejected.Load(),
		Degraded:            c.degraded.Load(),
		Errors:              c.errors.Load(),
	}
}
