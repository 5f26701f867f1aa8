package ui

import (
	_ "embed"

	"github.com/sluicehq/sluice/internal/redisx"
)

var (
	//go:embed lua/sample.lua
	sampleLua string
	//go:embed lua/session_new.lua
	sessionNewLua string
	//go:embed lua/session_get.lua
	sessionGetLua string
)

// library is the dashboard's scripts (the throughput samples, the sessions), run as Redis
// functions where Redis has FUNCTION and as EVALSHA scripts elsewhere (redisx.Library, as in the
// library packages).
var library = redisx.NewLibrary(redisx.LibrarySpec{
	Name: "sluice_ui",
	Scripts: []redisx.LibraryScript{
		{Name: "sample", Body: sampleLua},
		{Name: "session_new", Body: sessionNewLua},
		{Name: "session_get", Body: sessionGetLua},
	},
})

// newScripts runs the library on the dashboard's Redis.
func newScripts(cfg Config) *redisx.ScriptRunner {
	return redisx.NewScriptRunner(library, cfg.Redis, cfg.Logger, "ui")
}
