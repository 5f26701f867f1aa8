package cache

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one per file; each file's header lists its KEYS, ARGV and reply. Each starts
// with the helpers of lib.lua.
var (
	//go:embed lua/lib.lua
	libLua string
	//go:embed lua/acquire.lua
	acquireLua string
	//go:embed lua/fill.lua
	fillLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/delete.lua
	deleteLua string
	//go:embed lua/set.lua
	setLua string
)

// scripts holds the Store's Lua scripts. Go code calls them only through the typed wrappers below.
type scripts struct {
	acquire *redis.Script
	fill    *redis.Script
	release *redis.Script
	delete  *redis.Script
	set     *redis.Script
}

func newScripts() scripts {
	return scripts{
		acquire: redis.NewScript(libLua + acquireLua),
		fill:    redis.NewScript(libLua + fillLua),
		release: redis.NewScript(libLua + releaseLua),
		delete:  redis.NewScript(libLua + deleteLua),
		set:     redis.NewScript(libLua + setLua),
	}
}

func (s scripts) all() []*redis.Script {
	return []*redis.Script{s.acquire, s.fill, s.release, s.delete, s.set}
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
func (s scripts) runAcquire(ctx context.Context, c redis.Scripter, key, token string, lockTTLms int64) (acquireResult, error) {
	v, err := s.acquire.Run(ctx, c, []string{key}, acquireArgs(token, lockTTLms)...).Result()
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
func (s scripts) runFill(ctx context.Context, c redis.Scripter, key string, a fillArgs) (written bool, now int64, err error) {
	v, err := s.fill.Run(ctx, c, []string{key}, a.args()...).Result()
	if err != nil {
		return false, 0, err
	}
	return parseFill(v)
}

// runRelease runs release.lua on one key.
func (s scripts) runRelease(ctx context.Context, c redis.Scripter, key, token, channel string) error {
	return s.release.Run(ctx, c, []string{key}, token, channel).Err()
}

// runSet runs set.lua on one key and returns Redis's time.
func (s scripts) runSet(ctx context.Context, c redis.Scripter, key string, state byte, payload []byte, ttlms, afterms int64, channel string) (int64, error) {
	return s.set.Run(ctx, c, []string{key}, string(state), payload, ttlms, afterms, channel).Int64()
}
