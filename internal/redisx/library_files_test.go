package redisx_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// A library built from a package's files runs lua/<name>.lua after lua/lib.lua's helpers, with the
// flags Scripts gives it, as a function and as an EVALSHA script alike.
func TestNewLibraryFromFiles(t *testing.T) {
	t.Parallel()
	files := fstest.MapFS{
		"lua/lib.lua":   {Data: []byte("local function shout(s) return string.upper(s) end")},
		"lua/shout.lua": {Data: []byte("return shout(ARGV[1])")},
		"lua/keep.lua":  {Data: []byte("redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]")},
	}
	lib := redisx.NewLibraryFromFiles(files, redisx.LibrarySpec{
		Name:    "sluice_redisx_files_test",
		Scripts: redisx.Scripts([]string{"shout", "keep"}, map[string]string{"shout": "no-writes"}),
	})
	src := lib.Source()
	if !strings.Contains(src, "string.upper") || !strings.Contains(src, "flags = {'no-writes'}, callback") {
		t.Fatalf("library source lacks the helpers or shout's flag:\n%s", src)
	}
	if strings.Count(src, "flags =") != 1 {
		t.Fatalf("library source flags more than shout:\n%s", src)
	}
	env := redistest.New(t)
	ctx := context.Background()
	for _, mode := range []string{"functions", "evalsha"} {
		client := env.Client
		if mode == "evalsha" {
			client, _ = redistest.WithoutFunctions(t, env)
		}
		r := redisx.NewScriptRunner(lib, client, nil, "test")
		if got, err := r.Run(ctx, "shout", []string{env.Prefix + ":{a}"}, "hi").Text(); err != nil || got != "HI" {
			t.Fatalf("%s: shout = %q, %v; want HI", mode, got, err)
		}
		if got, err := r.Run(ctx, "keep", []string{env.Prefix + ":{a}"}, mode).Text(); err != nil || got != mode {
			t.Fatalf("%s: keep = %q, %v", mode, got, err)
		}
		if r.UsesFunctions(ctx) != (mode == "functions") {
			t.Fatalf("%s: UsesFunctions = %v", mode, r.UsesFunctions(ctx))
		}
	}
}

// A script whose file is missing is a broken build: building the library panics, naming the file.
func TestNewLibraryFromFilesMissingScript(t *testing.T) {
	t.Parallel()
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "lua/gone.lua") {
			t.Fatalf("panic = %v, want one naming lua/gone.lua", p)
		}
	}()
	redisx.NewLibraryFromFiles(fstest.MapFS{}, redisx.LibrarySpec{
		Name: "sluice_redisx_files_test", Scripts: []redisx.LibraryScript{{Name: "gone"}},
	})
}
