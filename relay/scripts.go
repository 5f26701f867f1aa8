package relay

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The endpoint scripts, one .lua file each, all starting with lua/lib.lua.
const (
	scriptSubmit   = "submit"
	scriptTake     = "take"
	scriptFinish   = "finish"
	scriptMaintain = "maintain"
	scriptGet      = "get"
	scriptCancel   = "cancel"
	scriptPermit   = "permit"
	scriptStats    = "stats"
	scriptLate     = "late"
	scriptSlotTake = "slot_take"
	scriptSlotFree = "slot_release"
)

var scriptNames = []string{
	scriptSubmit, scriptTake, scriptFinish, scriptMaintain, scriptGet, scriptCancel, scriptPermit, scriptStats, scriptLate,
	scriptSlotTake, scriptSlotFree,
}

// functionFlags are the Redis function flags of the scripts. Without flags Redis refuses a
// function outright when memory is over maxmemory; stats only reads (no-writes), and the calls
// that move tasks on, free slots or store what already happened (allow-oom) must work on a full
// Redis so it can drain. Submit and slot_take have no flag: a full Redis refuses new work.
var functionFlags = map[string]string{
	scriptStats: "no-writes",
	scriptTake:  "allow-oom", scriptFinish: "allow-oom", scriptMaintain: "allow-oom", scriptGet: "allow-oom",
	scriptCancel: "allow-oom", scriptPermit: "allow-oom", scriptLate: "allow-oom", scriptSlotFree: "allow-oom",
}

// The registry scripts (endpoint settings) are rare calls on other keys: plain EVALSHA scripts.
var (
	scriptEndpointSet    = redis.NewScript(mustRead("endpoint_set"))
	scriptEndpointForget = redis.NewScript(mustRead("endpoint_forget"))
)

// relayScripts are the endpoint scripts in the two forms Redis runs them: the functions of one
// library (Redis 7+; lib.lua's helpers are created once, at load, not at every call) and, for
// stores without FUNCTION, EVALSHA scripts that start with lib.lua. As in package queue.
type relayScripts struct {
	evals     map[string]*redis.Script
	library   string
	functions map[string]string // script name -> function name
}

const libraryVersion = "@VERSION@"

// loadScripts builds both forms. Library and function names carry a hash of the library, so
// Sluice versions with different scripts can share a Redis.
func loadScripts() *relayScripts {
	lib := mustRead("lib")
	rs := &relayScripts{evals: make(map[string]*redis.Script), functions: make(map[string]string)}
	var library strings.Builder
	library.WriteString("#!lua name=sluice_relay_" + libraryVersion + "\n" + lib + "\n")
	for _, name := range scriptNames {
		body := mustRead(name)
		rs.evals[name] = redis.NewScript(lib + "\nbind(KEYS, ARGV)\n" + body)
		flags := ""
		if f := functionFlags[name]; f != "" {
			flags = ", flags = {'" + f + "'}"
		}
		library.WriteString("redis.register_function{function_name = 'sluice_relay_" + libraryVersion + "_" + name +
			"'" + flags + ", callback = function(KEYS, ARGV)\nbind(KEYS, ARGV)\n" + body + "\nend}\n")
	}
	sum := sha256.Sum256([]byte(library.String()))
	version := hex.EncodeToString(sum[:])[:12]
	rs.library = strings.ReplaceAll(library.String(), libraryVersion, version)
	for _, name := range scriptNames {
		rs.functions[name] = "sluice_relay_" + version + "_" + name
	}
	return rs
}

// scripts are built once per process: they are fixed at build time.
var scripts = loadScripts()

// mustRead reads an embedded script; the scripts are fixed at build time, so a miss is a broken
// build.
func mustRead(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("relay: embedded script missing: " + name)
	}
	return string(b)
}

// How a Client runs its scripts, decided by load.
const (
	modeUnknown int32 = iota
	modeFunctions
	modeEvals
)

// run runs an endpoint script with the common ARGV (lib.lua) followed by args: as a library
// function where Redis has FUNCTION, else with EVALSHA (falling back to EVAL).
func (c *Client) run(ctx context.Context, name, endpoint string, args ...any) *redis.Cmd {
	k := c.keys.get(endpoint)
	argv := make([]any, 0, 7+len(args))
	argv = append(argv, c.ch.wake, c.ch.task, endpoint, c.finishedMs, c.readMs, c.cfg.ArchiveBacklog, c.archiving)
	argv = append(argv, args...)
	if !c.useFunctions(ctx) {
		return scripts.evals[name].Run(ctx, c.rdb, k.all, argv...)
	}
	fn := scripts.functions[name]
	cmd := c.rdb.FCall(ctx, fn, k.all, argv...)
	// A node that never had the library (new, flushed, failed over) did not run the call: load
	// it there and run the call once more.
	if isMissingScript(cmd.Err()) && c.reload(ctx) == nil {
		cmd = c.rdb.FCall(ctx, fn, k.all, argv...)
	}
	return cmd
}

// useFunctions reports whether scripts run as library functions, loading the library first when
// that is not decided yet. Until a load succeeds, calls run as EVALSHA scripts.
func (c *Client) useFunctions(ctx context.Context) bool {
	switch c.mode.Load() {
	case modeFunctions:
		return true
	case modeEvals:
		return false
	}
	return c.load(ctx, false) == nil && c.mode.Load() == modeFunctions
}

// load decides how scripts run and loads the library into every master. A store without
// FUNCTION, a user without the permission, or a Redis that refuses the library (out of memory, a
// replica) makes the Client run EVALSHA scripts for its life.
func (c *Client) load(ctx context.Context, replace bool) error {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if c.mode.Load() != modeUnknown && !replace {
		return nil
	}
	functions, err := c.loadLibrary(ctx, replace)
	var reply redis.Error
	switch {
	case err != nil && errors.As(err, &reply):
		c.cfg.Logger.Warn("relay: Redis refused the function library; scripts run with EVALSHA", slog.Any("error", err))
		functions = false
	case err != nil:
		return fmt.Errorf("relay: load function library: %w", err)
	}
	if functions {
		c.mode.Store(modeFunctions)
	} else {
		c.mode.Store(modeEvals)
	}
	return nil
}

// reload loads the library again after Redis reported a function missing.
func (c *Client) reload(ctx context.Context) error { return c.load(ctx, true) }

// loadLibrary loads the library on every master (replace: even over a library of the same
// name). It reports false, with no error, when the store has no FUNCTION command or the user may
// not run it.
func (c *Client) loadLibrary(ctx context.Context, replace bool) (bool, error) {
	load := func(ctx context.Context, rdb redis.Cmdable) error {
		if replace {
			return rdb.FunctionLoadReplace(ctx, scripts.library).Err()
		}
		err := rdb.FunctionLoad(ctx, scripts.library).Err()
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

// isMissingScript reports whether err says a script or function was not there to run.
func isMissingScript(err error) bool {
	return redisx.IsNoScript(err) || err != nil && redis.HasErrorPrefix(err, "Function not found")
}

func ms(d interface{ Milliseconds() int64 }) int64 { return d.Milliseconds() }
