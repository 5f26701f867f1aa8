package redisx

import (
	"io/fs"
)

// NewLibraryFromFiles builds a package's Library from its embedded Lua (a go:embed of lua/*.lua):
// each script's Body is lua/<Name>.lua, unless it comes with one (a script another package lends),
// and the helpers every script starts with are spec.Helpers (another package's, lent) followed by
// lua/lib.lua where the package has one. Every package keeps its scripts this way, so a script's file is
// where its name says. The files are fixed at build time, so a missing script is a broken build:
// it panics, naming the library and the file.
func NewLibraryFromFiles(files fs.FS, spec LibrarySpec) *Library {
	if b, err := fs.ReadFile(files, "lua/lib.lua"); err == nil {
		spec.Helpers += "\n" + string(b)
	}
	scripts := make([]LibraryScript, len(spec.Scripts))
	for i, s := range spec.Scripts {
		if s.Body != "" { // another package's script, which brings its own body
			scripts[i] = s
			continue
		}
		b, err := fs.ReadFile(files, "lua/"+s.Name+".lua")
		if err != nil {
			panic(spec.Name + ": embedded script missing: lua/" + s.Name + ".lua")
		}
		s.Body = string(b)
		scripts[i] = s
	}
	spec.Scripts = scripts
	return NewLibrary(spec)
}

// OnceScripts marks the scripts whose names once holds as Once (LibraryScript.Once) and returns
// scripts.
func OnceScripts[N ~string](scripts []LibraryScript, once map[N]bool) []LibraryScript {
	for i := range scripts {
		scripts[i].Once = once[N(scripts[i].Name)]
	}
	return scripts
}

// Scripts lists one LibraryScript a name, in order, each with its Redis function flag from flags
// (none where flags has no entry), for NewLibraryFromFiles to read.
func Scripts[N ~string](names []N, flags map[N]string) []LibraryScript {
	scripts := make([]LibraryScript, len(names))
	for i, name := range names {
		scripts[i] = LibraryScript{Name: string(name), Flag: flags[name]}
	}
	return scripts
}
