package redistest

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ScriptCommands counts the script commands a client of WithoutFunctions sent.
type ScriptCommands struct {
	mu               sync.Mutex
	functions, evals int
}

// Counts returns how many FUNCTION, FCALL and FCALL_RO commands were refused and how many EVAL
// and EVALSHA were sent.
func (c *ScriptCommands) Counts() (functions, evals int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.functions, c.evals
}

// WithoutFunctions returns a client of env's standalone server that behaves like a store without
// FUNCTION (Redis before 7, Redis-compatible stores): FUNCTION, FCALL and FCALL_RO get Redis's
// "unknown command" reply without reaching the server. The client is closed when the test ends.
func WithoutFunctions(t testing.TB, env *Env) (*redis.Client, *ScriptCommands) {
	t.Helper()
	rdb := redis.NewClient(StandaloneOptions(t, env))
	counts := &ScriptCommands{}
	rdb.AddHook(noFunctions{counts})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, counts
}

// StandaloneOptions are the client options of env's standalone server, for a test that makes a
// client of its own (a hook, another address); a cluster fails the test.
func StandaloneOptions(t testing.TB, env *Env) *redis.Options {
	t.Helper()
	if env.Cluster {
		t.Fatal("redistest: a client of its own needs a standalone server")
	}
	opts, err := redis.ParseURL(env.URL)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return opts
}

type noFunctions struct{ counts *ScriptCommands }

func (noFunctions) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h noFunctions) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.refuse(cmd) {
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (h noFunctions) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if h.refuse(cmd) {
				return cmd.Err()
			}
		}
		return next(ctx, cmds)
	}
}

func (h noFunctions) refuse(cmd redis.Cmder) bool {
	h.counts.mu.Lock()
	defer h.counts.mu.Unlock()
	switch cmd.Name() {
	case "function", "fcall", "fcall_ro":
		h.counts.functions++
		cmd.SetErr(replyError("ERR unknown command `" + cmd.Name() + "`, with args beginning with: "))
		return true
	case "evalsha", "eval":
		h.counts.evals++
	}
	return false
}

// replyError is an error reply of Redis (go-redis tells those apart by the RedisError method).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}
