package ratelimit

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// Test-only hooks: this file is compiled only into the package's tests, so the public API has no
// way to set the scripts' clock.

// SetNow makes l's scripts use now() (µs since the Unix epoch) instead of Redis TIME.
func SetNow(l *Limiter, now func() int64) { l.now = now }

// SetConcurrencyNow makes c's scripts use now() (µs since the Unix epoch) instead of Redis TIME.
func SetConcurrencyNow(c *Concurrency, now func() int64) { c.now = now }

// Keys exposes the key layout so tests can read raw state.
var (
	LimiterKey   = limiterKey
	SemaphoreKey = semaphoreKey
)

// callIDLibrary is the counting scripts made Once (redisx.LibraryScript.Once: a call key with each
// call, the answer kept for a repeat), the way a resent decision could be made safe that the
// limiter does not take; only the benchmark that weighs it against the others runs it.
var callIDLibrary = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name: "sluice_ratelimit_callid",
	Scripts: redisx.OnceScripts(redisx.Scripts([]string{scriptGCRA, scriptSlidingLog, scriptSlidingWindow, scriptFixedWindow}, nil),
		map[string]bool{scriptGCRA: true, scriptSlidingLog: true, scriptSlidingWindow: true, scriptFixedWindow: true}),
})

// SendWayNames name the ways a decision's script call can reach Redis, by what a resent call does:
// "counted-again" (go-redis resends it: its events count twice), "no-retry" (sent once: what
// AllowN does), "call-id" (a call key with each call; a repeat answers the kept answer).
var SendWayNames = []string{"counted-again", "no-retry", "call-id"}

// SendWays are l's decisions of one event sent each way of SendWayNames, in that order, for the
// benchmark that weighs them.
func SendWays(l *Limiter) []func(ctx context.Context, key string) error {
	callIDs := redisx.NewScriptRunner(callIDLibrary, l.client, l.cfg.Logger, "ratelimit")
	withCallID := func(ctx context.Context, name string, keys []string, argv ...any) *redis.Cmd {
		return callIDs.Run(ctx, name, redisx.OnceKeys(keys[0]+":call:"+redisx.NewCallID(), keys), argv...)
	}
	ways := []runner{l.scripts.Run, l.scripts.RunNoRetry, withCallID}
	allows := make([]func(ctx context.Context, key string) error, len(ways))
	for i, send := range ways {
		allows[i] = func(ctx context.Context, key string) error {
			_, err := l.runWith(ctx, send, key, 1)
			return err
		}
	}
	return allows
}
