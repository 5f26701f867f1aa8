package queue

import (
	"context"
	"embed"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// scriptName names one queue script (one .lua file). Code outside this file runs scripts only by
// these names, through run and runMany, which choose between a function call and EVALSHA.
type scriptName string

// The queue's scripts.
const (
	scriptPublish scriptName = "publish"
	// scriptPublishReady publishes one job due now with no ttl, unique key or callback, on its own
	// keys (a bare script: see bareScripts).
	scriptPublishReady scriptName = "publish_ready"
	// scriptPublishBatch publishes jobs due now with no unique key or callback, on their own keys
	// (bare).
	scriptPublishBatch scriptName = "publish_batch"
	scriptConsume      scriptName = "consume"
	scriptAck          scriptName = "ack"
	// scriptAckNoResult acks deliveries that keep no result, on their own keys (bare).
	scriptAckNoResult scriptName = "ack_noresult"
	scriptNack        scriptName = "nack"
	scriptTouch       scriptName = "touch"
	scriptRelease     scriptName = "release"
	scriptDelete      scriptName = "delete"
	scriptGet         scriptName = "get"
	scriptPeek        scriptName = "peek"
	scriptStats       scriptName = "stats"
	scriptPurge       scriptName = "purge"
	scriptDeadList    scriptName = "dead_list"
	scriptDeadRespawn scriptName = "dead_respawn"
	scriptDeadDelete  scriptName = "dead_delete"
	scriptMaintain    scriptName = "maintain"
	scriptPending     scriptName = "pending"
	// scriptConsumeCallbacks leases jobs of a queue's callback lane for the callback deliverer.
	scriptConsumeCallbacks scriptName = "consume_callbacks"
)

var scriptNames = []scriptName{
	scriptPublish, scriptConsume, scriptAck, scriptNack, scriptTouch, scriptRelease, scriptDelete,
	scriptGet, scriptPeek, scriptStats, scriptPurge, scriptDeadList, scriptDeadRespawn,
	scriptDeadDelete, scriptMaintain, scriptPending, scriptConsumeCallbacks, scriptPublishReady,
	scriptAckNoResult, scriptPublishBatch,
}

// bareScripts take keys and arguments of their own rather than the queue's whole set (lib.lua's
// bind). They run only as library functions.
var bareScripts = map[scriptName]bool{scriptPublishReady: true, scriptPublishBatch: true, scriptAckNoResult: true}

// scriptFlags are the Redis function flags of each script (see redisx.LibraryScript.Flag): the
// scripts that only read say no-writes (they run whatever the memory), and the ones that free
// memory or hardly add any (leases, acks, deletes, retries) say allow-oom, so a full Redis can
// still be drained. Publish has no flag: a full Redis refuses new jobs.
var scriptFlags = map[scriptName]string{
	scriptGet: "no-writes", scriptPeek: "no-writes", scriptStats: "no-writes", scriptDeadList: "no-writes",
	scriptPending: "no-writes",
	scriptConsume: "allow-oom", scriptAck: "allow-oom", scriptAckNoResult: "allow-oom", scriptNack: "allow-oom",
	scriptTouch:   "allow-oom",
	scriptRelease: "allow-oom", scriptDelete: "allow-oom", scriptPurge: "allow-oom",
	scriptDeadRespawn: "allow-oom", scriptDeadDelete: "allow-oom", scriptMaintain: "allow-oom",
	scriptConsumeCallbacks: "allow-oom",
}

// library is the queue's scripts, lib.lua's helpers first, built once per process: as functions
// of one Redis library and as EVALSHA scripts (redisx.Library).
var library = func() *redisx.Library {
	spec := redisx.LibrarySpec{
		Name:    "sluice_queue",
		Helpers: mustRead("lib.lua"),
		// rawget: reading a global Redis does not define (cmsgpack on a store without it) is an
		// error in Redis's script sandbox. Functions only load on Redis 7+, which has cmsgpack.
		EvalPrologue:     "bind(KEYS, ARGV, rawget(_G, 'cmsgpack'))",
		FunctionPrologue: "bind(KEYS, ARGV, cmsgpack)",
	}
	for _, name := range scriptNames {
		spec.Scripts = append(spec.Scripts, redisx.LibraryScript{
			Name: string(name), Body: mustRead(string(name) + ".lua"), Flag: scriptFlags[name],
			Bare: bareScripts[name],
		})
	}
	return redisx.NewLibrary(spec)
}()

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
func (c *Client) run(ctx context.Context, name scriptName, k queueKeys, args ...any) *redis.Cmd {
	if c.waitsForReplicas(name) {
		cmds, err := c.runReplicated(ctx, []scriptCall{{script: name, keys: k, args: args}})
		if err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		return cmds[0]
	}
	if !c.scripts.UsesFunctions(ctx) {
		return c.scripts.Run(ctx, string(name), k.all, append(c.commonArgs(k, len(args)), args...)...)
	}
	call := scriptCall{script: name, keys: k, args: args}
	return c.processFunction(ctx, func() *redis.Cmd { return c.fcall(ctx, call) })
}

// processFunction sends the FCALL that build makes. A node that never had the library (a new or
// flushed one) did not run the call: it loads the library there and sends the call once more.
func (c *Client) processFunction(ctx context.Context, build func() *redis.Cmd) *redis.Cmd {
	cmd := build()
	_ = c.rdb.Process(ctx, cmd)
	if redisx.IsMissingScript(cmd.Err()) && c.scripts.Reload(ctx) == nil {
		cmd = build()
		_ = c.rdb.Process(ctx, cmd)
	}
	return cmd
}

// fcall makes the FCALL command of a script call: FCALL fn numkeys keys... channel common... args...
// in one slice, from the queue's and the client's arguments boxed once (queueKeys.head,
// Client.common), which is what go-redis's FCall would otherwise rebuild and convert per call.
func (c *Client) fcall(ctx context.Context, call scriptCall) *redis.Cmd {
	argv := make([]any, 0, 2+len(call.keys.head)+len(c.common)+len(call.args))
	argv = append(argv, "fcall", c.scripts.Function(string(call.script)))
	argv = append(argv, call.keys.head...)
	argv = append(argv, c.common...)
	argv = append(argv, call.args...)
	cmd := redis.NewCmd(ctx, argv...)
	cmd.SetFirstKeyPos(3) // the first key routes the call on a cluster
	return cmd
}

// scriptCall is one script call of a pipelined batch (runMany): the script, the keys of the queue
// it runs on and its own arguments (after the common ARGV).
type scriptCall struct {
	script scriptName
	keys   queueKeys
	args   []any
}

// runMany runs script calls in one pipelined round trip and returns their commands in order, each
// with its own reply or error reply. When Redis lost its scripts or library (restart, failover,
// SCRIPT or FUNCTION FLUSH) it reloads them and runs once more the calls that could not run. Every
// script either ran whole or not at all, and a missing script did not run; the others did (on a
// cluster one node can lose its cache alone), so they must not run twice.
func (c *Client) runMany(ctx context.Context, calls []scriptCall) ([]*redis.Cmd, error) {
	if len(calls) > 0 && c.waitsForReplicas(calls[0].script) {
		return c.runReplicated(ctx, calls)
	}
	if err := c.scripts.Load(ctx); err != nil {
		return nil, err
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, call := range calls {
		cmds[i] = c.queueCall(ctx, pipe, call)
	}
	_, err := pipe.Exec(ctx)
	if anyMissingScript(cmds) {
		if err := c.scripts.Reload(ctx); err != nil {
			return nil, err
		}
		again := c.rdb.Pipeline()
		for i, cmd := range cmds {
			if redisx.IsMissingScript(cmd.Err()) {
				cmds[i] = c.queueCall(ctx, again, calls[i])
			}
		}
		_, err = again.Exec(ctx)
	}
	if err != nil && !errors.Is(err, redis.Nil) && !allReplied(cmds) {
		return nil, err
	}
	return cmds, nil
}

// queueCall queues a script call on a pipeline; the scripts must be loaded (loadOnce): go-redis
// does not fall back to EVAL on NOSCRIPT inside a pipeline.
func (c *Client) queueCall(ctx context.Context, pipe redis.Pipeliner, call scriptCall) *redis.Cmd {
	if c.scripts.UsesFunctions(ctx) {
		cmd := c.fcall(ctx, call)
		_ = pipe.Process(ctx, cmd)
		return cmd
	}
	argv := append(c.commonArgs(call.keys, len(call.args)), call.args...)
	return c.scripts.Queue(ctx, pipe, string(call.script), call.keys.all, argv...)
}

func anyMissingScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if redisx.IsMissingScript(c.Err()) {
			return true
		}
	}
	return false
}

// allReplied reports whether every command got a reply (possibly an error reply of its own), as
// opposed to a connection failure that left some without one.
func allReplied(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			var re redis.Error
			if !errors.As(err, &re) {
				return false
			}
		}
	}
	return true
}
