package ratelimit

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one per file; each file's header lists its KEYS, ARGV and reply. Each starts
// with the helpers of lib.lua.
var (
	//go:embed lua/lib.lua
	libLua string
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
		gcra:          redis.NewScript(libLua + gcraLua),
		slidingLog:    redis.NewScript(libLua + slidingLogLua),
		slidingWindow: redis.NewScript(libLua + slidingWindowLua),
		fixedWindow:   redis.NewScript(libLua + fixedWindowLua),
		acquire:       redis.NewScript(libLua + acquireLua),
		release:       redis.NewScript(libLua + releaseLua),
		extend:        redis.NewScript(libLua + extendLua),
	}
}
