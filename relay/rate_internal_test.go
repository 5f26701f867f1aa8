package relay

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// take.lua keeps the rate limit's next token time (tat) at full precision: a dispatcher that takes
// one token per call (the usual case at a few hundred QPS) spaces the calls at exactly 1/QPS.
// Stored with Lua's tostring (14 significant digits, so 0.1 ms for a time in ms since 1970) the
// 5.04 ms of QPS 200 with its margin became 5.0 ms at every call, and the endpoint got 200 calls
// a second instead of 198.4 (QPS + 1 in some one-second windows).
func TestTakeKeepsTokenTimesExact(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		checkExactTokens(t, env, 20, func(x exactTokens, i int) (redisUs, delayUs int64) {
			return x.takeTask(t, i)
		})
	})
}

// exactTokens is an endpoint (QPS 200) whose tokens were put far ahead by checkExactTokens.
type exactTokens struct {
	c         *Client
	e         Endpoint
	qps       float64
	lookahead int
}

// takeTask runs take.lua for one task and returns the call's Redis time and start delay (µs).
func (x exactTokens) takeTask(t *testing.T, i int) (redisUs, delayUs int64) {
	t.Helper()
	raw, err := x.c.run(t.Context(), scriptTake, x.e.Name, 1, x.e.Concurrency, x.qps, x.e.burst(), 60_000, 60_000, x.lookahead, 1, x.e.window(), logSpan.Milliseconds()).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := raw[1].(int64); n != 1 {
		t.Fatalf("call %d took %v tasks, want 1: %v", i, raw[1], raw)
	}
	redisUs, _ = raw[2].(int64)
	delayUs, _ = raw[3+7].(int64)
	return redisUs, delayUs
}

// checkExactTokens makes an endpoint at QPS 200 with tasks queued, puts its tokens far ahead, with
// a lookahead reaching them, so no call finds the tat behind Redis's clock (which would start the
// tokens over from now) however slow this machine is, and makes calls with take: each must start
// exactly 1/QPS after the one before, and the tat must be stored exactly.
func checkExactTokens(t *testing.T, env *redistest.Env, calls int, take func(x exactTokens, i int) (redisUs, delayUs int64)) {
	t.Helper()
	c := internalClient(t, env)
	ctx, k := t.Context(), c.keys.get("exact")
	e, err := c.SetEndpoint(ctx, Endpoint{Name: "exact", TargetURL: "http://127.0.0.1:9/", QPS: 200, Concurrency: 100})
	if err != nil {
		t.Fatal(err)
	}
	for range calls {
		if _, err := c.Submit(ctx, SubmitParams{Endpoint: "exact"}); err != nil {
			t.Fatal(err)
		}
	}
	now, err := env.Client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	tat0 := float64(now.UnixMilli()+30_000) + 0.25
	if err := env.Client.Set(ctx, k.all[6], strconv.FormatFloat(tat0, 'f', -1, 64), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	x := exactTokens{c: c, e: e, qps: spacedQPS(e), lookahead: 60_000}
	interval := 1000 / x.qps // ms
	for i := range calls {
		redisUs, delayUs := take(x, i)
		// The call's start: Redis's time rounded down to the ms plus its delay (µs, rounded down).
		start := float64(redisUs/1000) + float64(delayUs)/1000
		if want := tat0 + float64(i)*interval; math.Abs(start-want) > 0.002 {
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
}

// The start log moves a token only as far as its second needs. QPS 10 (tokens 100.8 ms apart),
// the next token 30 s ahead at T (so no call finds it behind Redis's clock), three tasks taken;
// the log's check spans 1005 ms (logSpan):
//   - nine calls logged from T-990 to T-910, one of them reported late (at T-900): there is
//     room, and the tokens stay T, T+100.8, T+201.6 (a late call moves nothing by itself);
//   - ten calls logged from T-990 to T-900: the first token waits until the first of them is a
//     span behind (T+15, and 1 µs), and the next follow one interval apart.
func TestStartLogMovesOnlyWhatTheSecondNeeds(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		for _, c := range []struct {
			name   string
			logged func(T float64) []float64
			want   []float64 // token times, from T
		}{
			{"room", func(T float64) (out []float64) {
				for i := range 9 {
					out = append(out, T-990+10*float64(i))
				}
				out[4] += 50 // a call reported late
				return out
			}, []float64{0, 100.8, 201.6}},
			{"full", func(T float64) (out []float64) {
				for i := range 10 {
					out = append(out, T-990+10*float64(i))
				}
				return out
			}, []float64{15.001, 115.801, 216.601}},
		} {
			cl := internalClient(t, env)
			ctx, k := t.Context(), cl.keys.get(c.name)
			e, err := cl.SetEndpoint(ctx, Endpoint{Name: c.name, TargetURL: "http://127.0.0.1:9/", QPS: 10, Concurrency: 100})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := cl.Submit(ctx, SubmitParams{Endpoint: c.name}); err != nil {
					t.Fatal(err)
				}
			}
			now, err := env.Client.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			T := float64(now.UnixMilli() + 30_000)
			if err := env.Client.Set(ctx, k.all[6], strconv.FormatFloat(T, 'f', -1, 64), time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			var log []redis.Z
			for i, s := range c.logged(T) {
				log = append(log, redis.Z{Score: s, Member: "earlier." + strconv.Itoa(i) + "#1"})
			}
			if err := env.Client.ZAdd(ctx, k.all[11], log...).Err(); err != nil {
				t.Fatal(err)
			}
			raw, err := cl.run(ctx, scriptTake, c.name, 3, e.Concurrency, spacedQPS(e), e.burst(), 60_000, 60_000, 60_000, 3, e.window(), logSpan.Milliseconds()).Slice()
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := raw[1].(int64); n != 3 {
				t.Fatalf("%s: took %v tasks, want 3: %v", c.name, raw[1], raw)
			}
			redisUs, _ := raw[2].(int64)
			for i, want := range c.want {
				delayUs, _ := raw[3+8*i+7].(int64)
				// The call's start: Redis's time rounded down to the ms plus its delay (µs, rounded down).
				if got := float64(redisUs/1000) + float64(delayUs)/1000 - T; math.Abs(got-want) > 0.002 {
					t.Errorf("%s: token %d at T%+.3f ms, want T%+.3f", c.name, i, got, want)
				}
			}
		}
	})
}
