package callback

import (
	"embed"

	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The settings scripts, one .lua file each. They share no helpers and take their own KEYS and
// ARGV (Bare).
const (
	scriptSecretRotate   = "secret_rotate"
	scriptDestinationAdd = "destination_add"
)

// library is the settings scripts, built once per process: as functions of one Redis library
// and as EVALSHA scripts (redisx.Library, as in packages queue and relay). Both add data, so
// neither carries a function flag: a Redis over maxmemory refuses them.
var library = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name: "sluice_callback",
	Scripts: []redisx.LibraryScript{
		{Name: scriptSecretRotate, Bare: true},
		{Name: scriptDestinationAdd, Bare: true},
	},
})
