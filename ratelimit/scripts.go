package ratelimit

import (
	"embed"

	"github.com/sluicehq/sluice/internal/redisx"
)

// The Lua scripts, one file each (lua/<name>.lua), each starting with the helpers of lua/lib.lua;
// each file's header lists its KEYS, ARGV and reply.
//
//go:embed lua/*.lua
var luaFiles embed.FS

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

// onceScripts run once per call however often the call reaches Redis (redisx.LibraryScript.Once:
// a call key with each call, the answer kept for a repeat): a release sent again after a lost
// reply would find its lease gone and answer ErrLeaseLost to the caller whose first send released
// it. An acquire needs no call key: its new lease id names it (a repeat finds the lease held).
var onceScripts = map[string]bool{scriptRelease: true}

// library is the package's scripts, built once per process, run as functions of one Redis library
// where Redis has FUNCTION and as EVALSHA scripts elsewhere (redisx.Library, as in the other
// packages), with lib.lua's helpers (created once, when the library loads). Flags (see
// redisx.LibraryScript.Flag): a decision or an acquire may add a key, so a Redis over maxmemory
// refuses it (Limiter's failure policy decides then); a release only frees memory, so it works on
// a full Redis (allow-oom).
var library = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name: "sluice_ratelimit",
	Scripts: redisx.OnceScripts(redisx.Scripts([]string{
		scriptGCRA, scriptSlidingLog, scriptSlidingWindow, scriptFixedWindow, scriptAcquire, scriptRelease, scriptExtend,
	}, map[string]string{scriptRelease: "allow-oom"}), onceScripts),
})
