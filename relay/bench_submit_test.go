package relay_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// BenchmarkSubmitTake measures the two scripts every task passes through, without an HTTP call:
// b.N online tasks of 16 subjects are submitted from 64 goroutines (submit.lua, concurrent
// calls combined), then one dispatcher permits them all (take.lua, batches of 256; an online
// task needs no worker). It reports each phase's rate and Redis CPU per task, first come first
// served (fifo) and with FairShare (fair), and with an idempotency key on every submit (keyed:
// one more key read and written per task).
func BenchmarkSubmitTake(b *testing.B) {
	b.Run("fifo", func(b *testing.B) { benchSubmitTake(b, relay.Endpoint{}, false) })
	b.Run("fair", func(b *testing.B) { benchSubmitTake(b, relay.Endpoint{FairShare: true}, false) })
	b.Run("keyed", func(b *testing.B) { benchSubmitTake(b, relay.Endpoint{}, true) })
}

func benchSubmitTake(b *testing.B, e relay.Endpoint, keyed bool) {
	env := redistest.New(b)
	c := newClient(b, env, relay.Config{})
	e.Name, e.TargetURL, e.Concurrency, e.MaxQueued = "bench", "http://127.0.0.1:9/", 1_000_000, 10_000_000
	e.PermitTTL = time.Hour // the permits hold their slots until the benchmark ends
	setEndpoint(b, c, e)
	ctx := context.Background()

	b.ResetTimer()
	start, redis0 := time.Now(), cpustat.MustRedis(b, env.Client)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				p := relay.SubmitParams{Endpoint: "bench", Type: relay.Online, Subject: "s" + strconv.FormatInt(n%16, 10)}
				if keyed {
					p.Namespace, p.Submitter, p.IdempotencyKey = "shop", "tok", "order-"+strconv.FormatInt(n, 10)
				}
				if _, err := c.Submit(ctx, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	submitted, redis1 := time.Now(), cpustat.MustRedis(b, env.Client)

	startDispatcherB(b, c, relay.DispatcherConfig{Batch: 256})
	testwait.Until(b, 5*time.Minute, fmt.Sprintf("%d tasks taken", b.N), func() bool {
		st, err := c.Stats(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		return st.Running >= int64(b.N)
	})
	taken, redis2 := time.Now(), cpustat.MustRedis(b, env.Client)
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(n/submitted.Sub(start).Seconds(), "submits/s")
	b.ReportMetric(n/taken.Sub(submitted).Seconds(), "takes/s")
	b.ReportMetric(float64((redis1-redis0).Microseconds())/n, "redis-µs/submit")
	b.ReportMetric(float64((redis2-redis1).Microseconds())/n, "redis-µs/take")
}
