package ratelimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/ratelimit"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// fakeClock is a script clock the test moves by hand, in microseconds since the Unix epoch.
type fakeClock struct{ us atomic.Int64 }

// newFakeClock starts at a whole second, 2026-01-01T00:00:00Z.
func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.us.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	return c
}

func (c *fakeClock) now() int64   { return c.us.Load() }
func (c *fakeClock) set(us int64) { c.us.Store(us) }

// newLimiter returns a limiter on env with the test's prefix.
func newLimiter(t *testing.T, env *redistest.Env, cfg ratelimit.Config) *ratelimit.Limiter {
	t.Helper()
	cfg.Prefix = env.Prefix
	l, err := ratelimit.New(env.Client, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// decide calls AllowN and fails the test on an error.
func decide(t *testing.T, l *ratelimit.Limiter, key string, n int) ratelimit.Result {
	t.Helper()
	res, err := l.AllowN(context.Background(), key, n)
	if err != nil {
		t.Fatalf("AllowN(%q, %d): %v", key, n, err)
	}
	return res
}

// secondClient returns another client on the same server (or cluster) as env.
func secondClient(t *testing.T, env *redistest.Env) redis.UniversalClient {
	t.Helper()
	other := redistest.New(t)
	if env.Cluster {
		other = redistest.NewCluster(t)
	}
	return other.Client
}
