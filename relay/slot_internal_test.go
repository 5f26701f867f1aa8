package relay

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// A slot takes the rate limit's tokens from the same state as take.lua and at the same precision:
// dispatch and slot calls taken in turn start exactly 1/QPS apart, and the tat is stored exactly.
func TestSlotTakesTokensAsTakeDoes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		checkExactTokens(t, env, 20, func(x exactTokens, i int) (redisUs, delayUs int64) {
			if i%2 == 0 {
				return x.takeTask(t, i)
			}
			r, err := x.c.run(t.Context(), scriptSlotTake, x.e.Name, x.e.Concurrency, x.qps, x.e.burst(), x.lookahead, x.e.window(), logSpan.Milliseconds(), 1, "slot:h"+strconv.Itoa(i), 60_000).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			if r[1] != 0 {
				t.Fatalf("slot %d not granted: %v", i, r)
			}
			return r[0], r[2]
		})
	})
}

// A slot counts in the concurrency take.lua checks: with the endpoint's one slot held by a
// callback, a dispatch starts no task; once it is released the task starts.
func TestSlotHoldsBackDispatch(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx := t.Context()
		e, err := c.SetEndpoint(ctx, Endpoint{Name: "one", TargetURL: "http://127.0.0.1:9/", Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		slot, err := c.AcquireSlot(ctx, "one", "cb-1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Submit(ctx, SubmitParams{Endpoint: "one"}); err != nil {
			t.Fatal(err)
		}
		var clock redisClock
		hint, jobs, err := c.take(ctx, e, 1, 1, &clock)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 0 || hint != -1 {
			t.Fatalf("take with the only slot held by a callback: hint %d, %d tasks; want -1 and none", hint, len(jobs))
		}
		if err := slot.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if _, jobs, err = c.take(ctx, e, 1, 1, &clock); err != nil || len(jobs) != 1 {
			t.Fatalf("take after the release: %d tasks, %v; want 1", len(jobs), err)
		}
	})
}

// A slot whose holder died is freed at its expiry by maintenance, which counts it as reaped but
// never takes it for a task: no task appears, nothing is requeued or failed.
func TestMaintenanceFreesExpiredSlotsAsSlots(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx, k := t.Context(), c.keys.get("m")
		if _, err := c.SetEndpoint(ctx, Endpoint{Name: "m", TargetURL: "http://127.0.0.1:9/", Concurrency: 5}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AcquireSlot(ctx, "m", "dead-holder", 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		// A slot member left in running alone (as no script leaves it) is freed too.
		if err := env.Client.ZAdd(ctx, k.all[3], redis.Z{Score: 1, Member: "slot:stray"}).Err(); err != nil {
			t.Fatal(err)
		}
		reaped := 0
		testwait.Until(t, time.Minute, "maintenance to reap 2 slots", func() bool {
			r, err := c.MaintainOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			reaped += r.Reaped
			return reaped >= 2
		})
		for _, key := range []string{k.all[0], k.all[2], k.all[3], k.all[12]} {
			if n, err := env.Client.Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Fatalf("%s exists (%d, %v) after the slots were freed", key, n, err)
			}
		}
		if keys, err := env.Client.Keys(ctx, k.all[10]+"*").Result(); err != nil || len(keys) != 0 {
			t.Fatalf("task hashes %v (%v): a slot was taken for a task", keys, err)
		}
		st, err := c.Stats(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		if st.Running != 0 || st.Slots != 0 || st.SlotsExpired != 1 || len(st.Totals) != 0 {
			t.Fatalf("stats = %+v; want nothing running, one slot expired, no task ended", st)
		}
	})
}
