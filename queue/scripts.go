package queue

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

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
	scriptPublish     scriptName = "publish"
	scriptConsume     scriptName = "consume"
	scriptAck         scriptName = "ack"
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
	scriptDeadDelete, scriptMaintain, scriptPending, scriptConsumeCallbacks,
}

// queueScripts are the queue's scripts in the two forms Redis runs them. On Redis 7 and later
// they are the functions of one library (FUNCTION LOAD): lib.lua's helpers are then created once,
// when the library loads, instead of at every call, which was about a third of what a small
// script cost Redis. Stores without FUNCTION (older Redis, the server's in-process fallback) run
// them as EVALSHA scripts that start with lib.lua.
type queueScripts struct {
	evals     map[scriptName]*redis.Script // script name -> lib.lua + the script
	library   string                       // the FUNCTION LOAD source
	functions map[scriptName]string        // script name -> function name in the library
}

// functionFlags are the Redis function flags of each script. Without flags Redis refuses a
// function outright when memory is over maxmemory (or writes are refused), where an EVAL script
// only fails at its first write that needs memory. So: the scripts that only read say no-writes
// (they run whatever the memory), and the ones that free memory or hardly add any (leases, acks,
// deletes, retries) say allow-oom, so a full Redis can still be drained. Publish has no flag: a
// full Redis refuses new jobs.
var functionFlags = map[scriptName]string{
	scriptGet: "no-writes", scriptPeek: "no-writes", scriptStats: "no-writes", scriptDeadList: "no-writes",
	scriptPending: "no-writes",
	scriptConsume: "allow-oom", scriptAck: "allow-oom", scriptNack: "allow-oom", scriptTouch: "allow-oom",
	scriptRelease: "allow-oom", scriptDelete: "allow-oom", scriptPurge: "allow-oom",
	scriptDeadRespawn: "allow-oom", scriptDeadDelete: "allow-oom", scriptMaintain: "allow-oom",
	scriptConsumeCallbacks: "allow-oom",
}

// libraryVersion stands for the version in the library source until the source is complete; the
// version is then a hash of everything the library holds (helpers, scripts, names and flags), so a
// Redis holding a library of that name holds exactly this one.
const libraryVersion = "@VERSION@"

// loadScripts builds both forms. Library and function names carry the version, so servers of
// different Sluice versions can share a Redis: each version loads its own library. The scripts
// are fixed at build time, so a failure here is a broken build, not a runtime condition.
func loadScripts() *queueScripts {
	lib := mustRead("lib.lua")
	qs := &queueScripts{
		evals:     make(map[scriptName]*redis.Script, len(scriptNames)),
		functions: make(map[scriptName]string, len(scriptNames)),
	}
	var library strings.Builder
	library.WriteString("#!lua name=sluice_queue_" + libraryVersion + "\n" + lib + "\n")
	for _, name := range scriptNames {
		body := mustRead(string(name) + ".lua")
		// rawget: reading a global Redis does not define (cmsgpack on a store without it) is an
		// error in Redis's script sandbox. Functions only load on Redis 7+, which has cmsgpack.
		qs.evals[name] = redis.NewScript(lib + "\nbind(KEYS, ARGV, rawget(_G, 'cmsgpack'))\n" + body)
		flags := ""
		if f := functionFlags[name]; f != "" {
			flags = ", flags = {'" + f + "'}"
		}
		library.WriteString("redis.register_function{function_name = 'sluice_" + libraryVersion + "_" + string(name) +
			"'" + flags + ", callback = function(KEYS, ARGV)\nbind(KEYS, ARGV, cmsgpack)\n" + body + "\nend}\n")
	}
	sum := sha256.Sum256([]byte(library.String()))
	version := hex.EncodeToString(sum[:])[:12]
	qs.library = strings.ReplaceAll(library.String(), libraryVersion, version)
	for _, name := range scriptNames {
		qs.functions[name] = "sluice_" + version + "_" + string(name)
	}
	return qs
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
	if !c.useFunctions(ctx) {
		argv := append(c.commonArgs(k, len(args)), args...)
		return c.scripts.evals[name].Run(ctx, c.rdb, k.all, argv...)
	}
	call := scriptCall{script: name, keys: k, args: args}
	cmd := c.fcall(ctx, call)
	_ = c.rdb.Process(ctx, cmd)
	// A node that never had the library (a new or flushed one) did not run the call: load it there
	// and run the call once more.
	if isMissingScript(cmd.Err()) && c.reload(ctx) == nil {
		cmd = c.fcall(ctx, call)
		_ = c.rdb.Process(ctx, cmd)
	}
	return cmd
}

// fcall makes the FCALL command of a script call: FCALL fn numkeys keys... channel common... args...
// in one slice, from the queue's and the client's arguments boxed once (queueKeys.head,
// Client.common), which is what go-redis's FCall would otherwise rebuild and convert per call.
func (c *Client) fcall(ctx context.Context, call scriptCall) *redis.Cmd {
	argv := make([]any, 0, 2+len(call.keys.head)+len(c.common)+len(call.args))
	argv = append(argv, "fcall", c.scripts.functions[call.script])
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
	if err := c.loadOnce(ctx); err != nil {
		return nil, err
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, call := range calls {
		cmds[i] = c.queueCall(ctx, pipe, call)
	}
	_, err := pipe.Exec(ctx)
	if anyMissingScript(cmds) {
		if err := c.reload(ctx); err != nil {
			return nil, err
		}
		again := c.rdb.Pipeline()
		for i, cmd := range cmds {
			if isMissingScript(cmd.Err()) {
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
	if c.loading.mode.Load() == modeFunctions {
		cmd := c.fcall(ctx, call)
		_ = pipe.Process(ctx, cmd)
		return cmd
	}
	argv := append(c.commonArgs(call.keys, len(call.args)), call.args...)
	return c.scripts.evals[call.script].EvalSha(ctx, pipe, call.keys.all, argv...)
}

func anyMissingScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if isMissingScript(c.Err()) {
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

// scriptLoading is how a Client's scripts run on its Redis, decided by the first load.
type scriptLoading struct {
	mu     sync.Mutex
	loaded bool
	mode   atomic.Int32 // modeUnknown until loadOnce decides: modeFunctions or modeEvals
}

// How a Client runs its scripts, decided by loadOnce.
const (
	modeUnknown int32 = iota
	modeFunctions
	modeEvals
)

// useFunctions reports whether scripts run as library functions, loading the library first when
// that is not decided yet. Until a load succeeds, calls run as EVALSHA scripts, which work on
// every store.
func (c *Client) useFunctions(ctx context.Context) bool {
	switch c.loading.mode.Load() {
	case modeFunctions:
		return true
	case modeEvals:
		return false
	}
	return c.loadOnce(ctx) == nil && c.loading.mode.Load() == modeFunctions
}

// loadOnce decides how scripts run and loads them into every master: the function library where
// the store has FUNCTION, else the EVALSHA scripts (pipelines need them loaded: go-redis does not
// fall back to EVAL on NOSCRIPT there).
func (c *Client) loadOnce(ctx context.Context) error {
	return c.load(ctx, false)
}

// load is loadOnce; replace loads the library even over one of the same name (after Redis said a
// function of it was missing, the library there is not this one).
func (c *Client) load(ctx context.Context, replace bool) error {
	c.loading.mu.Lock()
	defer c.loading.mu.Unlock()
	if c.loading.loaded {
		return nil
	}
	functions, err := c.loadLibrary(ctx, replace)
	var reply redis.Error
	switch {
	case err != nil && errors.As(err, &reply):
		// Redis refused the library (out of memory, a replica, loading, ...): run the scripts with
		// EVALSHA, which works in every state the calls themselves can run in, for this Client's
		// life rather than failing every pipeline and retrying the load on every call.
		c.cfg.Logger.Warn("queue: Redis refused the function library; scripts run with EVALSHA", slog.Any("error", err))
		functions = false
	case err != nil:
		return fmt.Errorf("queue: load function library: %w", err)
	}
	if functions {
		c.loading.mode.Store(modeFunctions)
	} else {
		all := make([]*redis.Script, 0, len(c.scripts.evals))
		for _, s := range c.scripts.evals {
			all = append(all, s)
		}
		if err := redisx.LoadScripts(ctx, c.rdb, all...); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		c.loading.mode.Store(modeEvals)
	}
	c.loading.loaded = true
	return nil
}

// reload loads the scripts again after Redis reported one missing (restart without persistence,
// failover to a node that never had them, SCRIPT or FUNCTION FLUSH).
func (c *Client) reload(ctx context.Context) error {
	c.loading.mu.Lock()
	c.loading.loaded = false
	c.loading.mu.Unlock()
	return c.load(ctx, true)
}

// loadLibrary loads the function library on every master (replace: even over a library of the
// same name). It reports false, with no error, when the store has no FUNCTION command (Redis
// before 7, Redis-compatible stores) or the user may not run it.
func (c *Client) loadLibrary(ctx context.Context, replace bool) (bool, error) {
	load := func(ctx context.Context, rdb redis.Cmdable) error {
		if replace {
			return rdb.FunctionLoadReplace(ctx, c.scripts.library).Err()
		}
		err := rdb.FunctionLoad(ctx, c.scripts.library).Err()
		if err != nil && redis.HasErrorPrefix(err, "Library") && strings.Contains(err.Error(), "already exists") {
			return nil // loaded by another client or process of this version
		}
		return err
	}
	var err error
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return load(ctx, node) })
	} else {
		err = load(ctx, c.rdb)
	}
	if err != nil && (redis.HasErrorPrefix(err, "unknown command") || redis.HasErrorPrefix(err, "NOPERM")) {
		return false, nil
	}
	return err == nil, err
}

// isMissingScript reports whether err says a script or function was not there to run (NOSCRIPT
// for a flushed script cache; "Function not found" on a node without the library): the call did
// not run and may be sent again once the scripts are loaded.
func isMissingScript(err error) bool {
	return redisx.IsNoScript(err) || err != nil && redis.HasErrorPrefix(err, "Function not found")
}
