package waitroom

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// scripts are the room scripts, each lib.lua followed by one script file. redis.Script runs them
// with EVALSHA and falls back to EVAL when a node's script cache does not have them (a new or
// flushed node), so they need no loading step.
type scripts struct {
	arrive, touch, release, maintain, configure, stats, reset *redis.Script
}

func newScripts() *scripts {
	lib := mustRead("lib.lua")
	s := func(name string) *redis.Script { return redis.NewScript(lib + "\n" + mustRead(name+".lua")) }
	return &scripts{
		arrive:    s("arrive"),
		touch:     s("touch"),
		release:   s("release"),
		maintain:  s("maintain"),
		configure: s("configure"),
		stats:     s("stats"),
		reset:     s("reset"),
	}
}

// mustRead reads an embedded script. The scripts are fixed at build time, so a failure is a broken
// build, not a runtime condition.
func mustRead(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("waitroom: embedded script missing: " + name)
	}
	return string(b)
}
