// Package cache is a consistent cache-aside cache on Redis: Store[K,V] loads a missing key from the
// source of truth once across every process, caches it with jittered TTLs, caches "not found"
// answers, and — unlike plain cache-aside — never lets a slow load write back a value read before
// a Delete.
//
// # The stale write it prevents
//
// Cache-aside's rule "update the database, then delete the cache key" has a hole: a reader that
// loaded the old row just before the update writes it back just after the delete, and the stale
// value lives until it expires. A Store closes the hole with a fence. A load first takes the key's
// lock, which names a random owner token; its write-back is a script that stores the value only
// while the record still names that token. Delete clears the token, so a load that started before
// the Delete can no longer write.
//
// # Hit path
//
// Each key is one Redis string whose encoding carries the value together with its state, its
// refresh time and its lock owner, so a hit is one plain GET — no Lua — and Get decides hit, stale
// or locked from that reply alone. Locks and refresh times use Redis TIME in milliseconds, so any
// TTL down to a millisecond works and app servers' clocks do not matter.
//
// # Misses
//
// One caller per key, across all processes, runs the loader; the others wait and are woken by a
// message published when the value lands (with a bounded wait, Config.WaitTimeout). Inside a
// process, callers share one resolution (single-flight), which runs on a context detached from any
// one caller, so a caller that gives up does not abort the load for the others. A loader panic
// releases the lock and is returned as ErrLoaderPanic.
//
// # Modes
//
// Eventual (the default): after a Delete, readers may get the old value while one of them reloads
// it in the background; no value read before the Delete is ever written, and once writes stop
// every key converges. Strong: once Delete returns, no Get that starts later returns a value older
// than the Delete; readers of a deleted key wait for the reload.
//
// # More
//
// Refresh-ahead (Config.RefreshAhead) reloads a value nearing its expiry in the background while
// readers keep getting it. GetMany batches hits (one MGET per hash slot) and misses (one loader
// call). Degrade switches (BypassReads, BypassDeletes) and Config.OnRedisError keep a service up
// when Redis is not, without stampeding the database. Stats counts hits, misses, loads, waits,
// refreshes and rejected stale writes; Config.Hooks reports them as they happen.
//
// See docs/cache.md in the repository for the full guide and benchmarks.
package cache
