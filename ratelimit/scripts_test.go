package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/ratelimit"
)

// TestScriptsWithoutFunctions: on a store without FUNCTION (Redis before 7, Redis-compatible
// stores) every script runs as an EVALSHA script and decides as it does as a function.
func TestScriptsWithoutFunctions(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	rdb, counts := redistest.WithoutFunctions(t, env)
	ctx := context.Background()
	for _, alg := range algorithms {
		l, err := ratelimit.New(rdb, ratelimit.Config{Algorithm: alg, Limit: ratelimit.PerHour(2), Prefix: env.Prefix,
			Name: alg.String(), FailurePolicy: ratelimit.FailOpen})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []bool{true, true, false} {
			if got := decide(t, l, "k", 1).Allowed; got != want {
				t.Fatalf("%s: decision %d allowed=%v, want %v", alg, i+1, got, want)
			}
		}
		if s := l.Stats(); s.RedisErrors != 0 || s.Fallback != 0 {
			t.Fatalf("%s: %+v: decided without Redis", alg, s)
		}
	}
	c, err := ratelimit.NewConcurrency(rdb, ratelimit.ConcurrencyConfig{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Acquire(ctx, "k", 1, time.Minute)
	if err != nil || !res.Acquired {
		t.Fatalf("Acquire: %+v, %v", res, err)
	}
	if err := c.Extend(ctx, "k", res.LeaseID, time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := c.Release(ctx, "k", res.LeaseID); err != nil {
		t.Fatalf("Release: %v", err)
	}
	functions, evals := counts.Counts()
	if functions != len(algorithms)+1 || evals == 0 {
		t.Fatalf("%d FUNCTION/FCALL commands (want one LOAD per limiter, which found none), %d scripts", functions, evals)
	}
}
