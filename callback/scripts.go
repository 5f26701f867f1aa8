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
var library = func() *redisx.Library {
	spec := redisx.LibrarySpec{Name: "sluice_callback"}
	for _, name := range []string{scriptSecretRotate, scriptDestinationAdd} {
		spec.Scripts = append(spec.Scripts, redisx.LibraryScript{Name: name, Body: mustRead(name), Bare: true})
	}
	return redisx.NewLibrary(spec)
}()

// mustRead reads an embedded script; the scripts are fixed at build time, so a miss is a broken
// build.
func mustRead(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("callback: embedded script missing: " + name)
	}
	return string(b)
}
