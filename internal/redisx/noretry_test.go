package redisx_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// countLibrary's script counts its runs in KEYS[1].
var countLibrary = redisx.NewLibrary(redisx.LibrarySpec{
	Name:    "sluice_redisx_noretry_test",
	Scripts: []redisx.LibraryScript{{Name: "incr", Body: "return redis.call('INCR', KEYS[1])"}},
})

// A call sent without retries whose reply is lost ran once and says its outcome is unknown
// (go-redis sends a plain call again: it runs twice).
func TestRunNoRetryLostReply(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	client, proxy := flakyproxy.NewClient(t, env)
	ctx := context.Background()
	r := redisx.NewScriptRunner(countLibrary, client, nil, "test")
	key := env.Prefix + ":n"
	rule := proxy.DropReplies(flakyproxy.FunctionCall("incr"), 1)
	err := r.RunNoRetry(ctx, "incr", []string{key}).Err()
	if !errors.Is(err, redisx.ErrOutcomeUnknown) || rule.Dropped() != 1 {
		t.Fatalf("lost reply: %v (%d dropped), want ErrOutcomeUnknown", err, rule.Dropped())
	}
	if n, _ := env.Client.Get(ctx, key).Int(); n != 1 {
		t.Fatalf("the script ran %d times, want 1", n)
	}
	if n, err := r.RunNoRetry(ctx, "incr", []string{key}).Int(); n != 2 || err != nil {
		t.Fatalf("next call = %d, %v; want 2", n, err)
	}
	rule = proxy.DropReplies(flakyproxy.FunctionCall("incr"), 1)
	if n, err := r.Run(ctx, "incr", []string{key}).Int(); n != 4 || err != nil || rule.Dropped() != 1 {
		t.Fatalf("a plain call with its reply lost = %d, %v; want 4: sent again, it ran twice", n, err)
	}
}

// A call that never reached Redis is not an unknown outcome; a store without FUNCTION runs the
// call as EVALSHA, and loads the scripts again when they were flushed.
func TestRunNoRetryKnownOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	down := redis.NewClient(&redis.Options{Addr: closed, MaxRetries: -1})
	defer down.Close()
	err = redisx.NewScriptRunner(countLibrary, down, nil, "test").RunNoRetry(ctx, "incr", []string{"k"}).Err()
	if err == nil || errors.Is(err, redisx.ErrOutcomeUnknown) {
		t.Fatalf("no server: %v; want a plain error (the call was never sent)", err)
	}

	env := redistest.New(t)
	rdb, counts := redistest.WithoutFunctions(t, env)
	r := redisx.NewScriptRunner(countLibrary, rdb, nil, "test")
	key := env.Prefix + ":n"
	for want := 1; want <= 2; want++ {
		if n, err := r.RunNoRetry(ctx, "incr", []string{key}).Int(); n != want || err != nil {
			t.Fatalf("call %d = %d, %v", want, n, err)
		}
		if err := env.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, evals := counts.Counts(); evals == 0 {
		t.Fatal("no EVALSHA sent")
	}
}
