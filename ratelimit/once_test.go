package ratelimit_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/ratelimit"
)

// A decision or a refund whose reply is lost reaches Redis once: the limiter does not send it
// again (go-redis would, after a read timeout or a broken connection, and its events would count
// twice). The caller of the lost decision gets the failure policy's answer, as for any Redis
// error; the caller of the lost refund gets ErrOutcomeUnknown. A second client, straight to
// Redis, then sees each counted once.
func TestLostReplyCountsOnce(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			env := redistest.New(t)
			rdb, proxy := flakyproxy.NewClient(t, env)
			clock := newFakeClock()
			cfg := ratelimit.Config{Algorithm: alg, Limit: ratelimit.PerSecond(10), Prefix: env.Prefix,
				FailurePolicy: ratelimit.FailClosed, Logger: quiet}
			limiter := func(rdb redis.UniversalClient) *ratelimit.Limiter {
				l, err := ratelimit.New(rdb, cfg)
				if err != nil {
					t.Fatal(err)
				}
				ratelimit.SetNow(l, clock.now)
				return l
			}
			direct := limiter(env.Client)

			flaky := limiter(rdb)
			rule := proxy.DropReplies(flakyproxy.FunctionCall(alg.String()), 1)
			res, err := flaky.Allow(t.Context(), "k")
			if err != nil || res.Allowed || rule.Dropped() != 1 {
				t.Fatalf("allow, reply lost: %+v, %v (%d dropped); want FailClosed's denial", res, err, rule.Dropped())
			}
			if st := flaky.Stats(); st.RedisErrors != 1 || st.Fallback != 1 || st.Denied != 1 {
				t.Fatalf("stats after the lost reply: %+v; want one Redis error decided by the policy", st)
			}
			if res := decide(t, direct, "k", 1); !res.Allowed || res.Remaining != 8 {
				t.Fatalf("next decision: %+v; want allowed with 8 left (the lost call counted once)", res)
			}

			rule = proxy.DropReplies(flakyproxy.FunctionCall(alg.String()), 1)
			err = limiter(rdb).Refund(t.Context(), "k", 1)
			if !errors.Is(err, ratelimit.ErrOutcomeUnknown) || rule.Dropped() != 1 {
				t.Fatalf("refund, reply lost: %v (%d dropped); want ErrOutcomeUnknown", err, rule.Dropped())
			}
			if res := decide(t, direct, "k", 1); !res.Allowed || res.Remaining != 8 {
				t.Fatalf("decision after the refund: %+v; want allowed with 8 left (given back once)", res)
			}
		})
	}
}
