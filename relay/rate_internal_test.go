package relay

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// take.lua keeps the rate limit's next token time (tat) at full precision: a dispatcher that takes
// one token per call (the usual case at a few hundred QPS) spaces the calls at exactly 1/QPS.
// Stored with Lua's tostring (14 significant digits, so 0.1 ms for a time in ms since 1970) the
// 5.04 ms of QPS 200 with its margin became 5.0 ms at every call, and the endpoint got 200 calls
// a second instead of 198.4 (QPS + 1 in some one-second windows).
func TestTakeKeepsTokenTimesExact(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx, k := t.Context(), c.keys.get("exact")
		e, err := c.SetEndpoint(ctx, Endpoint{Name: "exact", TargetURL: "http://127.0.0.1:9/", QPS: 200, Concurrency: 100})
		if err != nil {
			t.Fatal(err)
		}
		const calls = 20
		for range calls {
			if _, err := c.Submit(ctx, SubmitParams{Endpoint: "exact"}); err != nil {
				t.Fatal(err)
			}
		}
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Tokens far ahead, with a lookahead reaching them, so no call finds the tat behind Redis's
		// clock (which would start the tokens over from now) however slow this machine is.
		tat0 := float64(now.UnixMilli()+30_000) + 0.25
		const lookahead = 60_000
		if err := env.Client.Set(ctx, k.all[6], strconv.FormatFloat(tat0, 'f', -1, 64), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		qps := spacedQPS(e)
		interval := 1000 / qps // ms
		for i := range calls {
			raw, err := c.run(ctx, scriptTake, "exact", 1, e.Concurrency, qps, e.burst(), 60_000, 60_000, lookahead, 1).Slice()
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := raw[1].(int64); n != 1 {
				t.Fatalf("call %d took %v tasks, want 1: %v", i, raw[1], raw)
			}
			// The call's start: Redis's time rounded down to the ms plus its delay (µs, rounded down).
			redisUs, _ := raw[2].(int64)
			delayUs, _ := raw[3+7].(int64)
			start := float64(redisUs/1000) + float64(delayUs)/1000
			want := tat0 + float64(i)*interval
			if math.Abs(start-want) > 0.002 {
				t.Fatalf("call %d starts at %.3f ms, want %.3f (tokens %.4f ms apart)", i, start, want, interval)
			}
			got, err := env.Client.Get(ctx, k.all[6]).Float64()
			if err != nil {
				t.Fatal(err)
			}
			// Within 1 µs: a double near 1.8e12 ms has steps of 0.24 µs, and sums round differently.
			if want := tat0 + float64(i+1)*interval; math.Abs(got-want) > 0.001 {
				t.Fatalf("after call %d the tat is %.6f ms, want %.6f", i, got, want)
			}
		}
	})
}
