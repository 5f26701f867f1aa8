package redisx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// LibrarySpec describes a package's Lua scripts: the helpers every script starts with and the
// scripts themselves. Packages with many scripts (queue, relay) build a Library from it once per
// process and run every script through a ScriptRunner.
type LibrarySpec struct {
	// Name starts the library's name and its functions' names ("sluice_queue"). A hash of the
	// whole library is added to both, so processes of different versions can share a Redis: each
	// version loads its own library.
	Name string
	// Helpers is the code every script starts with (a package's lib.lua).
	Helpers string
	// EvalPrologue and FunctionPrologue run between the helpers and each script's body, in the
	// EVALSHA form and in the function form (typically a call binding KEYS and ARGV to the
	// helpers' names).
	EvalPrologue, FunctionPrologue string
	// Scripts are the scripts, each with its Redis function flag.
	Scripts []LibraryScript
}

// LibraryScript is one script of a library.
type LibraryScript struct {
	Name string
	Body string
	// Flag is the Redis function flag ("no-writes", "allow-oom" or ""). Without a flag Redis
	// refuses a function outright when memory is over maxmemory, where an EVAL script only fails
	// at its first write that needs memory; scripts that only read or that free memory say so,
	// so a full Redis can still be drained.
	Flag string
	// Bare scripts do not start with the prologue: they take KEYS and ARGV of their own, not the
	// set the prologue binds (a hot path that passes only the keys it touches, say).
	Bare bool
	// Once scripts change state and may arrive twice (a client library sends a call again after a
	// read timeout): each call passes a call key (OnceKeys, with a NewCallID) before its own keys,
	// and a repeated call answers what the first answered without acting again (once.go).
	Once bool
}

// Library is a package's scripts in the two forms Redis runs them. On Redis 7 and later they are
// the functions of one library (FUNCTION LOAD): the helpers are then created once, when the
// library loads, instead of at every call, which was about a third of what a small script cost
// Redis. Stores without FUNCTION (older Redis, Redis-compatible stores) run them as EVALSHA
// scripts that start with the helpers.
type Library struct {
	evals     map[string]*redis.Script // script name -> helpers + prologue + body
	source    string                   // the FUNCTION LOAD source
	functions map[string]string        // script name -> function name in the library
}

// libraryVersion stands for the version in the library source until the source is complete; the
// version is then a hash of everything the library holds (helpers, scripts, names and flags), so
// a Redis holding a library of that name holds exactly this one.
const libraryVersion = "@VERSION@"

// NewLibrary builds both forms of spec's scripts. The scripts are fixed at build time.
func NewLibrary(spec LibrarySpec) *Library {
	l := &Library{
		evals:     make(map[string]*redis.Script, len(spec.Scripts)),
		functions: make(map[string]string, len(spec.Scripts)),
	}
	prefix := spec.Name + "_" + libraryVersion
	var src strings.Builder
	src.WriteString("#!lua name=" + prefix + "\n" + spec.Helpers + "\n" + onceHelper + "\n")
	for _, s := range spec.Scripts {
		evalPrologue, functionPrologue := spec.EvalPrologue, spec.FunctionPrologue
		if s.Bare {
			evalPrologue, functionPrologue = "", ""
		}
		evalBody, functionBody := evalPrologue+"\n"+s.Body, functionPrologue+"\n"+s.Body
		if s.Once {
			evalBody = onceHelper + "\n" + wrapOnce(evalBody, "rawget(_G, 'cmsgpack')")
			functionBody = wrapOnce(functionBody, "cmsgpack")
		}
		l.evals[s.Name] = redis.NewScript(spec.Helpers + "\n" + evalBody)
		flags := ""
		if s.Flag != "" {
			flags = ", flags = {'" + s.Flag + "'}"
		}
		src.WriteString("redis.register_function{function_name = '" + prefix + "_" + s.Name + "'" + flags +
			", callback = function(KEYS, ARGV)\n" + functionBody + "\nend}\n")
	}
	sum := sha256.Sum256([]byte(src.String()))
	version := hex.EncodeToString(sum[:])[:12]
	l.source = strings.ReplaceAll(src.String(), libraryVersion, version)
	for _, s := range spec.Scripts {
		l.functions[s.Name] = spec.Name + "_" + version + "_" + s.Name
	}
	return l
}

// Source is the library as FUNCTION LOAD takes it.
func (l *Library) Source() string { return l.source }

// ScriptRunner runs a Library's scripts on one Redis client: as library functions where the store
// has FUNCTION, else as EVALSHA scripts, decided at the first call and kept for the runner's life.
// A node that lost the library or the scripts (restart without persistence, failover to a node
// that never had them, FLUSH) gets them again and the call that could not run runs once more.
type ScriptRunner struct {
	lib    *Library
	rdb    redis.UniversalClient
	logger *slog.Logger
	owner  string // names the package in errors and logs

	mu     sync.Mutex
	loaded bool
	mode   atomic.Int32 // modeUnknown until Load decides: modeFunctions or modeEvals
}

// How a ScriptRunner runs its scripts, decided by Load.
const (
	modeUnknown int32 = iota
	modeFunctions
	modeEvals
)

// NewScriptRunner returns a runner of lib's scripts on rdb. owner names the package in errors
// and logs ("queue").
func NewScriptRunner(lib *Library, rdb redis.UniversalClient, logger *slog.Logger, owner string) *ScriptRunner {
	if logger == nil {
		logger = slog.Default()
	}
	return &ScriptRunner{lib: lib, rdb: rdb, logger: logger, owner: owner}
}

// Run runs script name on keys with argv: as a library function where Redis has FUNCTION, else
// with EVALSHA (falling back to EVAL).
func (r *ScriptRunner) Run(ctx context.Context, name string, keys []string, argv ...any) *redis.Cmd {
	if !r.UsesFunctions(ctx) {
		return r.lib.evals[name].Run(ctx, r.rdb, keys, argv...)
	}
	return r.Process(ctx, func() *redis.Cmd { return r.command(ctx, name, true, keys, argv) })
}

// command is a call of script name as one command: FCALL of its library function, or EVALSHA of
// its script (which must be loaded).
func (r *ScriptRunner) command(ctx context.Context, name string, function bool, keys []string, argv []any) *redis.Cmd {
	args := make([]any, 0, 3+len(keys)+len(argv))
	if function {
		args = append(args, "fcall", r.lib.functions[name], len(keys))
	} else {
		args = append(args, "evalsha", r.lib.evals[name].Hash(), len(keys))
	}
	for _, k := range keys {
		args = append(args, k)
	}
	cmd := redis.NewCmd(ctx, append(args, argv...)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // the first key routes the call on a cluster
	}
	return cmd
}

// Process sends the call of a library function that build makes (an FCALL command, from
// arguments the caller converted once, say). A node that never had the library (a new, flushed or
// failed-over one) did not run the call: Process loads the library there and sends a call build
// makes once more. Only for calls of a runner that uses functions (UsesFunctions).
func (r *ScriptRunner) Process(ctx context.Context, build func() *redis.Cmd) *redis.Cmd {
	cmd := build()
	_ = r.rdb.Process(ctx, cmd)
	if IsMissingScript(cmd.Err()) && r.Reload(ctx) == nil {
		cmd = build()
		_ = r.rdb.Process(ctx, cmd)
	}
	return cmd
}

// Function is the name of script name's function in the library, for callers that build their
// FCALL commands themselves (from arguments converted once, say).
func (r *ScriptRunner) Function(name string) string { return r.lib.functions[name] }

// Queue queues a call of script name on a pipeline. The scripts must be loaded (Load): go-redis
// does not fall back to EVAL on NOSCRIPT inside a pipeline.
func (r *ScriptRunner) Queue(ctx context.Context, pipe redis.Pipeliner, name string, keys []string, argv ...any) *redis.Cmd {
	if r.mode.Load() == modeFunctions {
		return pipe.FCall(ctx, r.lib.functions[name], keys, argv...)
	}
	return r.lib.evals[name].EvalSha(ctx, pipe, keys, argv...)
}

// UsesFunctions reports whether scripts run as library functions, loading them first when that
// is not decided yet. Until a load succeeds, calls run as EVALSHA scripts, which work on every
// store.
func (r *ScriptRunner) UsesFunctions(ctx context.Context) bool {
	switch r.mode.Load() {
	case modeFunctions:
		return true
	case modeEvals:
		return false
	}
	return r.Load(ctx) == nil && r.mode.Load() == modeFunctions
}

// Load decides how scripts run and loads them into every master, once: the function library
// where the store has FUNCTION, else the EVALSHA scripts (pipelines need them loaded).
func (r *ScriptRunner) Load(ctx context.Context) error { return r.load(ctx, false) }

// Reload loads the scripts again after Redis reported one missing; the library replaces one of
// the same name (a node that said a function of it was missing does not hold this one).
func (r *ScriptRunner) Reload(ctx context.Context) error {
	r.mu.Lock()
	r.loaded = false
	r.mu.Unlock()
	return r.load(ctx, true)
}

func (r *ScriptRunner) load(ctx context.Context, replace bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loaded {
		return nil
	}
	functions, err := r.loadLibrary(ctx, replace)
	var reply redis.Error
	switch {
	case err != nil && errors.As(err, &reply):
		// Redis refused the library (out of memory, a replica, loading, ...): run the scripts with
		// EVALSHA, which works in every state the calls themselves can run in, for the runner's
		// life rather than failing every pipeline and retrying the load on every call.
		r.logger.Warn(r.owner+": Redis refused the function library; scripts run with EVALSHA", slog.Any("error", err))
		functions = false
	case err != nil:
		return fmt.Errorf("%s: load function library: %w", r.owner, err)
	}
	if functions {
		r.mode.Store(modeFunctions)
	} else {
		all := make([]*redis.Script, 0, len(r.lib.evals))
		for _, s := range r.lib.evals {
			all = append(all, s)
		}
		if err := LoadScripts(ctx, r.rdb, all...); err != nil {
			return fmt.Errorf("%s: %w", r.owner, err)
		}
		r.mode.Store(modeEvals)
	}
	r.loaded = true
	return nil
}

// loadLibrary loads the function library on every master (replace: even over a library of the
// same name). It reports false, with no error, when the store has no FUNCTION command (Redis
// before 7, Redis-compatible stores) or the user may not run it.
func (r *ScriptRunner) loadLibrary(ctx context.Context, replace bool) (bool, error) {
	load := func(ctx context.Context, rdb redis.Cmdable) error {
		if replace {
			return rdb.FunctionLoadReplace(ctx, r.lib.source).Err()
		}
		err := rdb.FunctionLoad(ctx, r.lib.source).Err()
		if err != nil && redis.HasErrorPrefix(err, "Library") && strings.Contains(err.Error(), "already exists") {
			return nil // loaded by another client or process of this version
		}
		return err
	}
	var err error
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return load(ctx, node) })
	} else {
		err = load(ctx, r.rdb)
	}
	if err != nil && (redis.HasErrorPrefix(err, "unknown command") || redis.HasErrorPrefix(err, "NOPERM")) {
		return false, nil
	}
	return err == nil, err
}

// IsMissingScript reports whether err says a script or function was not there to run (NOSCRIPT
// for a flushed script cache; "Function not found" on a node without the library): the call did
// not run and may be sent again once the scripts are loaded.
func IsMissingScript(err error) bool {
	return IsNoScript(err) || err != nil && redis.HasErrorPrefix(err, "Function not found")
}
