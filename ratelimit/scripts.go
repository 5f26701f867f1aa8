package ratelimit

import (
	_ "embed"

	"github.com/sluicehq/sluice/internal/redisx"
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

// The scripts' names in the library.
const (
	scriptGCRA          = "gcra"
	scriptSlidingLog    = "sliding_log"
	scriptSlidingWindow = "sliding_window"
	scriptFixedWindow   = "fixed_window"
	scriptAcquire       = "concurrency_acquire"
	scriptRelease       = "concurrency_release"
	scriptExtend        = "concurrency_extend"
)

// library is the package's scripts, built once per process, run as functions of one Redis library
// where Redis has FUNCTION and as EVALSHA scripts elsewhere (redisx.Library, as in the other
// packages), with lib.lua's helpers (created once, when the library loads). Flags (see redisx.LibraryScript.Flag): a decision or an
// acquire may add a key, so a Redis over maxmemory refuses it (Limiter's failure policy decides
// then); a release only frees memory, so it works on a full Redis (allow-oom).
var library = redisx.NewLibrary(redisx.LibrarySpec{
	Name:    "sluice_ratelimit",
	Helpers: libLua,
	Scripts: []redisx.LibraryScript{
		{Name: scriptGCRA, Body: gcraLua},
		{Name: scriptSlidingLog, Body: slidingLogLua},
		{Name: scriptSlidingWindow, Body: slidingWindowLua},
		{Name: scriptFixedWindow, Body: fixedWindowLua},
		{Name: scriptAcquire, Body: acquireLua},
		{Name: scriptRelease, Body: releaseLua, Flag: "allow-oom"},
		{Name: scriptExtend, Body: extendLua},
	},
})
