package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The store reads Redis's clock without asking Redis: a lone publish of a job due now stamps its
// record with the client's reading of Redis's clock instead of calling TIME in its script, which
// was the dearest part of that script (about 17k of 58k Redis instructions). The publish time of
// such a job decides nothing (a job due now is due whatever the stamp says); every time decision
// (due, lease, expiry, limits) still reads TIME inside its script.
//
// A reading is Redis's time from a reply that carries it (a consume, a maintenance pass, or a lone
// publish that ran TIME because the reading was missing or old), taken only when that call's round
// trip was under clockMaxRoundTrip, plus the time that has passed since the reply arrived on the
// client's monotonic clock, less a drift allowance. Redis read its time after the call was sent and
// before its reply arrived, so the reading is never ahead of Redis's clock and is behind it by at
// most that round trip, the 1 ms Redis's time is rounded down by, and the allowance. The client's
// wall clock plays no part: a producer whose clock is wrong, or set while it runs, stamps what it
// would with a right one. docs/job-states.md states the bound for published_at.

// clockMaxAge is how long a reading of Redis's clock is used. After it, the next lone publish runs
// TIME in its script and its reply is the new reading: one such publish every two seconds per
// Redis server in a producer that only publishes, whatever its rate. That is the explicit TIME a
// producer without consumes or maintenance needs, and it costs no round trip of its own.
const clockMaxAge = 2 * time.Second

// clockMaxRoundTrip is the longest round trip whose reply may become the reading: the reading can
// be behind Redis's clock by as much as the round trip of the call it came from.
const clockMaxRoundTrip = 25 * time.Millisecond

// clockDriftDiv bounds the drift of the client's clock against Redis's to 1/2000 (500 ppm, the
// most an NTP daemon slews a clock by): a reading is held back by that share of its age, at most
// 1 ms at clockMaxAge, so drift cannot carry it ahead of Redis's clock.
const clockDriftDiv = 2000

// noReading marks a redisClock that has no reading yet.
const noReading = -1 << 63

// redisClocks are the client's readings of its Redis servers' clocks: one for a standalone server
// or Sentinel's primary, one per primary of a Cluster, whose nodes' clocks differ as their hosts'
// do. Safe for concurrent use.
type redisClocks struct {
	local func() time.Time // the client's clock: time.Now, whose monotonic reading is used
	base  time.Time        // local times count µs from here
	// maxRoundTrip is clockMaxRoundTrip; tests of the refresh mechanics raise it, so that a slow
	// test machine does not turn a reading down.
	maxRoundTrip int64

	single  *redisClock
	cluster *redis.ClusterClient
	byNode  sync.Map // primary's address -> *redisClock
}

// redisClock is the reading of one Redis server's clock.
type redisClock struct {
	// offset is Redis's time less the local time, in µs, as of the reading taken at local time
	// sampled (noReading: none). Each is stored alone: a reader may pair a new offset with the
	// time of the reading before, which only makes the reading look older than it is.
	offset, sampled atomic.Int64
}

func newRedisClock() *redisClock {
	c := &redisClock{}
	c.sampled.Store(noReading)
	return c
}

func newRedisClocks(rdb redis.UniversalClient, local func() time.Time) *redisClocks {
	cs := &redisClocks{local: local, base: local(), maxRoundTrip: clockMaxRoundTrip.Microseconds()}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cs.cluster = cc
	} else {
		cs.single = newRedisClock()
	}
	return cs
}

// micros is the local time in µs since base.
func (cs *redisClocks) micros() int64 { return cs.local().Sub(cs.base).Microseconds() }

// of returns the clock of the server that holds key, or nil when a Cluster cannot say which node
// that is (the caller then lets its script read TIME).
func (cs *redisClocks) of(ctx context.Context, key string) *redisClock {
	if cs.single != nil {
		return cs.single
	}
	node, err := cs.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil
	}
	addr := node.Options().Addr
	if c, ok := cs.byNode.Load(addr); ok {
		return c.(*redisClock)
	}
	c, _ := cs.byNode.LoadOrStore(addr, newRedisClock())
	return c.(*redisClock)
}

// learn takes Redis's time redisMs (TIME in ms, rounded down) from the reply of a call to the server
// that holds key, sent at local time sent (micros), which has just arrived. A reply that took
// longer than maxRoundTrip is not used.
func (cs *redisClocks) learn(ctx context.Context, key string, redisMs, sent int64) {
	if c := cs.of(ctx, key); c != nil {
		cs.learnOn(c, redisMs, sent)
	}
}

// learnOn is learn on the clock of the server the call went to.
func (cs *redisClocks) learnOn(c *redisClock, redisMs, sent int64) {
	arrived := cs.micros()
	if rt := arrived - sent; rt < 0 || rt > cs.maxRoundTrip {
		return
	}
	c.offset.Store(redisMs*1000 - arrived)
	c.sampled.Store(arrived)
}

// forget drops c's reading: a call to its server failed, perhaps because another server took its
// place (a failover), whose clock may differ.
func (c *redisClock) forget() { c.sampled.Store(noReading) }

// nowMs is Redis's time in ms by the reading of c, and false when c has no reading or it is older
// than clockMaxAge (or the local clock went back past it).
func (cs *redisClocks) nowMs(c *redisClock) (int64, bool) {
	sampled := c.sampled.Load()
	if sampled == noReading {
		return 0, false
	}
	now := cs.micros()
	age := now - sampled
	if age < 0 || age > clockMaxAge.Microseconds() {
		return 0, false
	}
	us := now + c.offset.Load() - age/clockDriftDiv
	return floorDiv(us, 1000), true
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
