package ratelimit

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one per file; each file's header lists its KEYS, ARGV and reply.
var (
	//go:embed lua/gcra.lua
	gcraLua string
	//go:embed lua/sliding_log.lua
	slidingLogLua string
	//go:embed lua/sliding_window.lua
	slidingWindowLua string
	//go:embed lua/fixed_window.lua
	fixedWindowLua string
	//go:embed lua/concurrency_acquire.lua
	acquireLua string
	//go:embed lua/concurrency_release.lua
	releaseLua string
	//go:embed lua/concurrency_extend.lua
	extendLua string
)

// scripts holds the compiled scripts of one Limiter or Concurrency. They are values, not package
// state: redis.Script is immutable, but keeping them per instance keeps the package free of
// globals.
type scripts struct {
	gcra, slidingLog, slidingWindow, fixedWindow *redis.Script
	acquire, release, extend                     *redis.Script
}

func newScripts() *scripts {
	return &scripts{
		gcra:          redis.NewScript(gcraLua),
		slidingLog:    redis.NewScript(slidingLogLua),
		slidingWindow: redis.NewScript(slidingWindowLua),
		fixedWindow:   redis.NewScript(fixedWindowLua),
		acquire:       redis.NewScript(acquireLua),
		release:       redis.NewScript(releaseLua),
		extend:        redis.NewScript(extendLua),
	}
}
