package cache

import (
	"context"
	"embed"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// The Lua scripts, one file each (lua/<name>.lua), each starting with the helpers of lua/lib.lua;
// each file's header lists its KEYS, ARGV and reply.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// The scripts' names in the library.
const (
	scriptAcquire = "acquire"
	scriptFill    = "fill"
	scriptRelease = "release"
	scriptDelete  = "delete"
	scriptSet     = "set"
)

// scriptFlags (see redisx.LibraryScript.Flag): taking a lock and writing a value may add memory,
// so a Redis over maxmemory refuses them; giving a lock back and deleting (or fencing) a value
// only free or rewrite a record, so they work on a full Redis (allow-oom) and no stale value
// outlives a delete there.
var scriptFlags = map[string]string{scriptRelease: "allow-oom", scriptDelete: "allow-oom"}

// library is the Store's scripts, built once per process, run as functions of one Redis library
// where Redis has FUNCTION and as EVALSHA scripts elsewhere (redisx.Library, as in the other
// packages), with lib.lua's helpers (created once, when the library loads).
var library = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name:    "sluice_cache",
	Scripts: redisx.Scripts([]string{scriptAcquire, scriptFill, scriptRelease, scriptDelete, scriptSet}, scriptFlags),
})

// scripts runs the Store's Lua scripts on its Redis. Go code calls them only through the typed
// wrappers below.
type scripts struct{ runner *redisx.ScriptRunner }

func newScripts(rdb redis.UniversalClient, logger *slog.Logger) scripts {
	return scripts{runner: redisx.NewScriptRunner(library, rdb, logger, "cache")}
}

// run runs script name on one key.
func (s scripts) run(ctx context.Context, name, key string, args ...any) *redis.Cmd {
	return s.runner.Run(ctx, name, []string{key}, args...)
}

// acquire result codes.
const (
	acqLocked   = 0
	acqAcquired = 1
	acqFresh    = 2
)

type acquireResult struct {
	code   int64
	now    int64
	rec    record
	hasRec bool
}

func parseAcquire(v any) (acquireResult, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		return acquireResult{}, fmt.Errorf("cache: acquire: unexpected reply %v", v)
	}
	code, ok1 := arr[0].(int64)
	now, ok2 := arr[1].(int64)
	if !ok1 || !ok2 {
		return acquireResult{}, fmt.Errorf("cache: acquire: unexpected reply %v", v)
	}
	res := acquireResult{code: code, now: now}
	if len(arr) > 2 {
		if s, ok := arr[2].(string); ok {
			res.rec, res.hasRec = decodeRecord(s)
		}
	}
	return res, nil
}

func acquireArgs(token string, lockTTLms int64) []any { return []any{token, lockTTLms} }

// runAcquire runs acquire.lua on one key.
func (s scripts) runAcquire(ctx context.Context, key, token string, lockTTLms int64) (acquireResult, error) {
	v, err := s.run(ctx, scriptAcquire, key, acquireArgs(token, lockTTLms)...).Result()
	if err != nil {
		return acquireResult{}, err
	}
	return parseAcquire(v)
}

type fillArgs struct {
	token   string
	state   byte
	payload []byte
	ttlms   int64 // TTL, jitter applied
	afterms int64 // refresh-ahead point, ms after the write (0: none)
	channel string
}

func (a fillArgs) args() []any {
	return []any{a.token, string(a.state), a.payload, a.ttlms, a.afterms, a.channel}
}

func parseFill(v any) (written bool, now int64, err error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return false, 0, fmt.Errorf("cache: fill: unexpected reply %v", v)
	}
	w, ok1 := arr[0].(int64)
	n, ok2 := arr[1].(int64)
	if !ok1 || !ok2 {
		return false, 0, fmt.Errorf("cache: fill: unexpected reply %v", v)
	}
	return w == 1, n, nil
}

// runFill runs fill.lua on one key.
func (s scripts) runFill(ctx context.Context, key string, a fillArgs) (written bool, now int64, err error) {
	v, err := s.run(ctx, scriptFill, key, a.args()...).Result()
	if err != nil {
		return false, 0, err
	}
	return parseFill(v)
}

// runRelease runs release.lua on one key.
func (s scripts) runRelease(ctx context.Context, key, token, channel string) error {
	return s.run(ctx, scriptRelease, key, token, channel).Err()
}

// runSet runs set.lua on one key and returns Redis's time.
func (s scripts) runSet(ctx context.Context, key string, state byte, payload []byte, ttlms, afterms int64, channel string) (int64, error) {
	return s.run(ctx, scriptSet, key, string(state), payload, ttlms, afterms, channel).Int64()
}
