package redisx_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

var testLibrary = redisx.NewLibrary(redisx.LibrarySpec{
	Name:             "sluice_redisx_test",
	Helpers:          "local function greet(k) return 'hello ' .. k end",
	EvalPrologue:     "local key = KEYS[1]",
	FunctionPrologue: "local key = KEYS[1]",
	Scripts: []redisx.LibraryScript{
		{Name: "greet", Body: "return greet(key)", Flag: "no-writes"},
		{Name: "set", Body: "redis.call('SET', key, ARGV[1]) return redis.call('GET', key)"},
	},
})

// A runner runs a library's scripts on standalone Redis and on a Cluster (functions on every
// master), in pipelines too.
func TestScriptRunner(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		r := redisx.NewScriptRunner(testLibrary, env.Client, nil, "test")
		key := env.Prefix + ":{a}"
		if got, err := r.Run(ctx, "greet", []string{key}).Text(); err != nil || got != "hello "+key {
			t.Fatalf("Run(greet) = %q, %v", got, err)
		}
		if !r.UsesFunctions(ctx) {
			t.Fatal("a Redis 7 runs the scripts as EVALSHA, want functions")
		}
		pipe := env.Client.Pipeline()
		var cmds []*redis.Cmd
		for _, k := range []string{"a", "b", "c", "d"} {
			cmds = append(cmds, r.Queue(ctx, pipe, "set", []string{env.Prefix + ":{" + k + "}"}, k))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("pipelined calls: %v", err)
		}
		for i, k := range []string{"a", "b", "c", "d"} {
			if got := cmds[i].Val(); got != k {
				t.Fatalf("pipelined set %s returned %v", k, got)
			}
		}
	})
}

// A Redis that lost the library (FUNCTION FLUSH, a restart without persistence, a failover) gets
// it again, and the call that found it missing runs once more.
func TestScriptRunnerReloads(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t) // its own server: the flush must not reach other tests
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	r := redisx.NewScriptRunner(testLibrary, rdb, nil, "test")
	if got, err := r.Run(ctx, "set", []string{"k"}, "first").Text(); err != nil || got != "first" {
		t.Fatalf("Run = %q, %v", got, err)
	}
	if err := rdb.FunctionFlush(ctx).Err(); err != nil {
		t.Fatalf("FUNCTION FLUSH: %v", err)
	}
	if got, err := r.Run(ctx, "set", []string{"k"}, "again").Text(); err != nil || got != "again" {
		t.Fatalf("Run after FUNCTION FLUSH = %q, %v", got, err)
	}
}
