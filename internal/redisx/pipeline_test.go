package redisx_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// setCalls are calls of testLibrary's "set" on keys of different slots.
func setCalls(prefix, value string) []redisx.ScriptCall {
	var calls []redisx.ScriptCall
	for _, k := range []string{"a", "b", "c", "d"} {
		calls = append(calls, redisx.ScriptCall{Name: "set", Keys: []string{prefix + ":{" + k + "}"}, Args: []any{value + k}})
	}
	return calls
}

func checkSet(t *testing.T, cmds []*redis.Cmd, err error, value string) {
	t.Helper()
	if err != nil {
		t.Fatalf("RunMany: %v", err)
	}
	for i, k := range []string{"a", "b", "c", "d"} {
		if got, err := cmds[i].Text(); err != nil || got != value+k {
			t.Fatalf("call %d = %q, %v; want %q", i, got, err, value+k)
		}
	}
}

// RunMany runs calls in one pipeline on standalone Redis and on a Cluster, and one call alone.
func TestRunMany(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		r := redisx.NewScriptRunner(testLibrary, env.Client, nil, "test")
		cmds, err := r.RunMany(ctx, setCalls(env.Prefix, "v"))
		checkSet(t, cmds, err, "v")
		one, err := r.RunMany(ctx, setCalls(env.Prefix, "w")[:1])
		if err != nil || len(one) != 1 || one[0].Val() != "wa" {
			t.Fatalf("one call: %v, %v", one, err)
		}
	})
}

// Pipelined calls that find the library or the scripts gone (a flushed or restarted node) run once
// more after a reload, with FUNCTION and on a store without it.
func TestRunManyReloads(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t) // its own server: the flushes must not reach other tests
	env := &redistest.Env{URL: "redis://" + srv.Addr()}
	plain, _ := redistest.WithoutFunctions(t, env)
	withFunctions := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = withFunctions.Close() })
	for _, c := range []struct {
		name  string
		rdb   *redis.Client
		flush func(context.Context) error
	}{
		{"functions", withFunctions, func(ctx context.Context) error { return withFunctions.FunctionFlush(ctx).Err() }},
		{"evalsha", plain, func(ctx context.Context) error { return plain.ScriptFlush(ctx).Err() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			r := redisx.NewScriptRunner(testLibrary, c.rdb, nil, "test")
			cmds, err := r.RunMany(ctx, setCalls(c.name, "1"))
			checkSet(t, cmds, err, "1")
			if got := r.UsesFunctions(ctx); got != (c.name == "functions") {
				t.Fatalf("UsesFunctions = %v", got)
			}
			for round := range 2 {
				if err := c.flush(ctx); err != nil {
					t.Fatal(err)
				}
				value := fmt.Sprint(round + 2)
				cmds, err := r.RunMany(ctx, setCalls(c.name, value))
				checkSet(t, cmds, err, value)
			}
		})
	}
}
