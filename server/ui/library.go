package ui

import (
	"embed"

	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// library is the dashboard's scripts (the throughput samples, the sessions, the servers' heartbeats), lua/<name>.lua each,
// run as Redis functions where Redis has FUNCTION and as EVALSHA scripts elsewhere
// (redisx.Library, as in the library packages).
var library = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name:    "sluice_ui",
	Scripts: []redisx.LibraryScript{{Name: "sample"}, {Name: "session_new"}, {Name: "session_get"}, {Name: "presence"}},
})

// newScripts runs the library on the dashboard's Redis.
func newScripts(cfg Config) *redisx.ScriptRunner {
	return redisx.NewScriptRunner(library, cfg.Redis, cfg.Logger, "ui")
}
