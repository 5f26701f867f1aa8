package queue

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script names, one .lua file each.
const (
	scriptPublish     = "publish"
	scriptConsume     = "consume"
	scriptAck         = "ack"
	scriptNack        = "nack"
	scriptTouch       = "touch"
	scriptRelease     = "release"
	scriptDelete      = "delete"
	scriptGet         = "get"
	scriptPeek        = "peek"
	scriptStats       = "stats"
	scriptPurge       = "purge"
	scriptDeadList    = "dead_list"
	scriptDeadRespawn = "dead_respawn"
	scriptDeadDelete  = "dead_delete"
	scriptMaintain    = "maintain"
)

var scriptNames = []string{
	scriptPublish, scriptConsume, scriptAck, scriptNack, scriptTouch, scriptRelease, scriptDelete,
	scriptGet, scriptPeek, scriptStats, scriptPurge, scriptDeadList, scriptDeadRespawn,
	scriptDeadDelete, scriptMaintain,
}

// loadScripts joins lib.lua with each script. The scripts are fixed at build time, so a failure
// here is a broken build, not a runtime condition.
func loadScripts() map[string]*redis.Script {
	lib := mustRead("lib.lua")
	out := make(map[string]*redis.Script, len(scriptNames))
	for _, name := range scriptNames {
		out[name] = redis.NewScript(lib + "\n" + mustRead(name+".lua"))
	}
	return out
}

func mustRead(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("queue: embedded script missing: " + name)
	}
	return string(b)
}

// commonArgs are the leading ARGV of every script (lib.lua).
func (c *Client) commonArgs(k queueKeys, extra int) []any {
	args := make([]any, 0, 1+len(c.common)+extra)
	args = append(args, k.channel)
	return append(args, c.common...)
}

// run runs a script on one queue's keys with the common ARGV followed by args.
func (c *Client) run(ctx context.Context, name string, k queueKeys, args ...any) *redis.Cmd {
	return c.scripts[name].Run(ctx, c.rdb, k.all, append(c.commonArgs(k, len(args)), args...)...)
}

// runPipelined queues a script on a pipeline; the scripts must be loaded (Client.loadOnce).
func (c *Client) runPipelined(ctx context.Context, pipe redis.Pipeliner, name string, k queueKeys, args ...any) *redis.Cmd {
	return c.scripts[name].EvalSha(ctx, pipe, k.all, append(c.commonArgs(k, len(args)), args...)...)
}
