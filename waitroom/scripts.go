package waitroom

import (
	"embed"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The room scripts, one .lua file each, all starting with lua/lib.lua.
const (
	scriptArrive    = "arrive"
	scriptTouch     = "touch"
	scriptRelease   = "release"
	scriptMaintain  = "maintain"
	scriptConfigure = "configure"
	scriptStats     = "stats"
	scriptReset     = "reset"
)

// scriptFlags are the Redis function flags of the scripts (see redisx.LibraryScript.Flag): stats
// only reads (no-writes); release, maintain and reset free slots, lines and rooms, so they work
// on a Redis over maxmemory (allow-oom) and a full Redis can drain; arrivals, touches and settings
// may add memory, so a full Redis refuses them (and the room's fail_open decides).
var scriptFlags = map[string]string{
	scriptStats:   "no-writes",
	scriptRelease: "allow-oom", scriptMaintain: "allow-oom", scriptReset: "allow-oom",
}

// onceScripts run once per call however often the call reaches Redis (redisx.LibraryScript.Once:
// a call key with each call, the answer kept for a repeat). A release sent again after a lost
// reply would find the visitor gone and answer "held nothing" to the caller whose first send freed
// the slot. Arrive needs no call key: it is named by its visitor (a repeat finds the visitor
// admitted or in line and changes nothing), and it is the hot path, polled by every visitor.
var onceScripts = map[string]bool{scriptRelease: true}

// library is the room scripts, lib.lua's helpers first, built once per process: as functions of one
// Redis library and as EVALSHA scripts (redisx.Library, as in the other packages).
var library = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name:             "sluice_waitroom",
	Helpers:          duework.LuaHelpers(),
	EvalPrologue:     "bind(KEYS)",
	FunctionPrologue: "bind(KEYS)",
	Scripts: append(redisx.OnceScripts(redisx.Scripts([]string{
		scriptArrive, scriptTouch, scriptRelease, scriptMaintain, scriptConfigure, scriptStats, scriptReset,
	}, scriptFlags), onceScripts), duework.MarkScript()),
})
