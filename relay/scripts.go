package relay

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Endpoint scripts start with lua/lib.lua; registry scripts stand alone.
var (
	scriptSubmit   = endpointScript("submit")
	scriptTake     = endpointScript("take")
	scriptFinish   = endpointScript("finish")
	scriptMaintain = endpointScript("maintain")
	scriptGet      = endpointScript("get")
	scriptCancel   = endpointScript("cancel")
	scriptPermit   = endpointScript("permit")
	scriptStats    = endpointScript("stats")

	scriptEndpointSet    = redis.NewScript(mustRead("endpoint_set"))
	scriptEndpointForget = redis.NewScript(mustRead("endpoint_forget"))
)

func endpointScript(name string) *redis.Script {
	return redis.NewScript(mustRead("lib") + "\n" + mustRead(name))
}

// mustRead reads an embedded script; the scripts are fixed at build time, so a miss is a broken
// build.
func mustRead(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("relay: embedded script missing: " + name)
	}
	return string(b)
}

// run runs an endpoint script with the common ARGV (lib.lua) followed by args. Script.Run sends
// EVALSHA and falls back to EVAL when Redis does not have the script.
func (c *Client) run(ctx context.Context, s *redis.Script, endpoint string, args ...any) *redis.Cmd {
	k := c.keys.get(endpoint)
	argv := make([]any, 0, 7+len(args))
	argv = append(argv, c.ch.wake, c.ch.task, endpoint, c.finishedMs, c.readMs, c.cfg.ArchiveBacklog, c.archiving)
	argv = append(argv, args...)
	return s.Run(ctx, c.rdb, k.all, argv...)
}

func ms(d interface{ Milliseconds() int64 }) int64 { return d.Milliseconds() }
