package ratelimit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/ratelimit"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestFailurePolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy      ratelimit.FailurePolicy
		wantAllowed []bool
	}{
		{ratelimit.FailOpen, []bool{true, true, true}},
		{ratelimit.FailClosed, []bool{false, false, false}},
		{ratelimit.FailLocal, []bool{true, true, false}}, // the same limit, kept in-process
	}
	for _, tt := range tests {
		for _, down := range []string{"closed port", "closed client"} {
			t.Run(tt.policy.String()+"/"+down, func(t *testing.T) {
				t.Parallel()
				var client *redis.Client
				if down == "closed port" {
					client = redis.NewClient(&redis.Options{Addr: closedAddr(t), MaxRetries: -1})
					defer client.Close()
				} else {
					env := redistest.New(t)
					opts, err := redis.ParseURL(env.URL)
					if err != nil {
						t.Fatal(err)
					}
					client = redis.NewClient(opts)
					_ = client.Close()
				}
				l, err := ratelimit.New(client, ratelimit.Config{
					Limit: ratelimit.PerHour(2), FailurePolicy: tt.policy, RetryRedisAfter: time.Hour, Logger: quiet,
				})
				if err != nil {
					t.Fatal(err)
				}
				for i, want := range tt.wantAllowed {
					res, err := l.Allow(context.Background(), "k")
					if err != nil {
						t.Fatalf("call %d: error %v; a Redis failure must be decided by the policy", i, err)
					}
					if res.Allowed != want || res.Limit != 2 {
						t.Fatalf("call %d: %+v, want allowed=%v limit=2", i, res, want)
					}
					if !res.Allowed && res.RetryAfter <= 0 {
						t.Fatalf("call %d: denial without RetryAfter: %+v", i, res)
					}
				}
				st := l.Stats()
				if st.RedisErrors != 1 || st.Fallback != 3 {
					t.Fatalf("Stats = %+v, want 1 Redis error (then no retry for an hour) and 3 fallback decisions", st)
				}
				if err := l.Refund(context.Background(), "k", 1); err != nil {
					t.Fatalf("Refund while down: %v", err)
				}
			})
		}
	}
}

// TestFailureRecovers: while Redis cannot be dialled the policy decides; once it can, the
// limiter goes back to Redis by itself.
func TestFailureRecovers(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	opts, err := redis.ParseURL(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	down.Store(true)
	var d net.Dialer
	opts.MaxRetries = -1
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if down.Load() {
			return nil, errors.New("test: redis is down")
		}
		return d.DialContext(ctx, network, addr)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	l, err := ratelimit.New(client, ratelimit.Config{
		Limit: ratelimit.PerHour(5), Prefix: env.Prefix, FailurePolicy: ratelimit.FailClosed,
		RetryRedisAfter: 10 * time.Millisecond, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := decide(t, l, "k", 1); res.Allowed {
		t.Fatalf("fail-closed allowed while down: %+v", res)
	}
	down.Store(false)
	testwait.Until(t, 30*time.Second, "the limiter to use Redis again", func() bool {
		return decide(t, l, "k", 1).Allowed
	})
	// Only Redis can allow under FailClosed: the key is there, with the event counted.
	if n, err := env.Client.Exists(context.Background(), ratelimit.LimiterKey(env.Prefix, "gcra", "k")).Result(); err != nil || n != 1 {
		t.Fatalf("limiter key exists = %d, %v; want 1", n, err)
	}
	if res := decide(t, l, "k", 1); !res.Allowed || res.Remaining != 3 {
		t.Fatalf("after recovery: %+v, want allowed with 3 remaining", res)
	}
	if st := l.Stats(); st.RedisErrors < 1 || st.Fallback < 1 || st.Allowed != 2 {
		t.Fatalf("Stats = %+v", st)
	}
}

// TestCanceledContextIsNotARedisFailure: the caller giving up is returned as such, not decided by
// the failure policy.
func TestCanceledContextIsNotARedisFailure(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	l := newLimiter(t, env, ratelimit.Config{Limit: ratelimit.PerHour(5), FailurePolicy: ratelimit.FailOpen})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Allow(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Allow on a canceled context: %v", err)
	}
	if st := l.Stats(); st != (ratelimit.Stats{}) {
		t.Fatalf("Stats = %+v, want nothing counted", st)
	}
}
