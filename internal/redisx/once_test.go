package redisx_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// onceLibrary's scripts count their runs in KEYS[1] (after the call key) and answer in every
// shape a script answers in.
var onceLibrary = redisx.NewLibrary(redisx.LibrarySpec{
	Name:             "sluice_redisx_once_test",
	EvalPrologue:     "local key = KEYS[1]",
	FunctionPrologue: "local key = KEYS[1]",
	Scripts: []redisx.LibraryScript{
		{Name: "count", Once: true, Body: "local n = redis.call('INCR', key) " +
			"return {n, ARGV[1], {'nested', n * 10}, false, #KEYS}"},
		{Name: "refuse", Once: true, Body: "redis.call('INCR', key) return redis.error_reply('LEASE_LOST')"},
	},
})

// A Once call whose reply is lost runs once: go-redis sends it again and gets the first answer.
func TestOnceScriptRunsOnceWhenTheReplyIsLost(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	client, proxy := flakyproxy.NewClient(t, env)
	ctx := context.Background()
	r := redisx.NewScriptRunner(onceLibrary, client, nil, "test")
	if !r.UsesFunctions(ctx) {
		t.Fatal("want functions on Redis 7")
	}
	key := env.Prefix + ":{o}:n"
	rule := proxy.DropReplies(flakyproxy.FunctionCall("count"), 1)
	got, err := r.Run(ctx, "count", redisx.OnceKeys(env.Prefix+":{o}:call:"+redisx.NewCallID(), []string{key}), "hi").Slice()
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(1), "hi", []any{"nested", int64(10)}, nil, int64(1)}
	if !reflect.DeepEqual(got, want) || rule.Dropped() != 1 {
		t.Fatalf("answer %#v with %d replies dropped, want %#v and 1", got, rule.Dropped(), want)
	}
	if n, _ := env.Client.Get(ctx, key).Int(); n != 1 {
		t.Fatalf("the script ran %d times, want 1", n)
	}
	// An error answer is kept too: the repeat gets the first call's refusal.
	direct := r.Run(ctx, "refuse", redisx.OnceKeys(env.Prefix+":{o}:call:"+redisx.NewCallID(), []string{key})).Err()
	rule = proxy.DropReplies(flakyproxy.FunctionCall("refuse"), 1)
	err = r.Run(ctx, "refuse", redisx.OnceKeys(env.Prefix+":{o}:call:"+redisx.NewCallID(), []string{key})).Err()
	if err == nil || direct == nil || err.Error() != direct.Error() || !strings.Contains(err.Error(), "LEASE_LOST") || rule.Dropped() != 1 {
		t.Fatalf("refuse = %v with %d dropped, want %v", err, rule.Dropped(), direct)
	}
	if n, _ := env.Client.Get(ctx, key).Int(); n != 3 {
		t.Fatalf("after two refusals the counter is %d, want 3", n)
	}
}

// The EVAL form keeps answers the same way, and a new call id is a new call; the kept answer
// expires.
func TestOnceScriptAsEval(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	rdb, counts := redistest.WithoutFunctions(t, env)
	ctx := context.Background()
	r := redisx.NewScriptRunner(onceLibrary, rdb, nil, "test")
	key := env.Prefix + ":{e}:n"
	callKey := env.Prefix + ":{e}:call:" + redisx.NewCallID()
	run := func(callKey string) []any {
		t.Helper()
		got, err := r.Run(ctx, "count", redisx.OnceKeys(callKey, []string{key}), "x").Slice()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first, again := run(callKey), run(callKey)
	if !reflect.DeepEqual(first, again) || first[0] != int64(1) {
		t.Fatalf("first %v, repeat %v: want the same answer, counted once", first, again)
	}
	if other := run(env.Prefix + ":{e}:call:" + redisx.NewCallID()); other[0] != int64(2) {
		t.Fatalf("a new call id answered %v, want a second run", other)
	}
	if _, evals := counts.Counts(); evals == 0 {
		t.Fatal("no EVAL sent")
	}
	if ttl := env.Client.PTTL(ctx, callKey).Val(); ttl <= 0 || ttl > redisx.OnceTTL {
		t.Fatalf("the kept answer's TTL is %v, want within %v", ttl, redisx.OnceTTL)
	}
	var _ redis.Cmder = r.Run(ctx, "count", redisx.OnceKeys(callKey, []string{key}), "x")
}
