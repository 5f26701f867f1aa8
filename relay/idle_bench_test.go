package relay_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// BenchmarkIdleEndpoints measures what many idle endpoints cost while a Dispatcher runs with its
// defaults (maintenance every 500 ms): SLUICE_BENCH_IDLE_ENDPOINTS endpoints (default 10,000)
// that hold nothing, then Redis's CPU over SLUICE_BENCH_IDLE_WINDOW (default 1m, longer than the waits between re-checks so that they
// are counted; INFO CPU,
// summed over the masters of a cluster), then how late after its expiry a slot whose holder
// never releases it (held 2 s on an endpoint created last) is freed. It waits for the registry's
// first sweep first (its mark), as the queues' benchmark does. docs/benchmarks.md has the figures
// and the command.
func BenchmarkIdleEndpoints(b *testing.B) {
	b.Run("standalone", func(b *testing.B) { benchIdleEndpoints(b, redistest.New(b)) })
	b.Run("cluster", func(b *testing.B) { benchIdleEndpoints(b, redistest.NewCluster(b)) })
}

func benchIdleEndpoints(b *testing.B, env *redistest.Env) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_BENCH_IDLE_ENDPOINTS"))
	n = cmp.Or(n, 10000)
	window, _ := time.ParseDuration(os.Getenv("SLUICE_BENCH_IDLE_WINDOW"))
	window = cmp.Or(window, time.Minute)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := newClient(b, env, relay.Config{Logger: quiet, RefreshInterval: time.Second})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := c.SetEndpoint(ctx, relay.Endpoint{Name: fmt.Sprintf("idle%05d", i), TargetURL: "https://idle.example.com/"}); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	d, err := relay.NewDispatcher(c, relay.DispatcherConfig{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := d.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Stop)
	testwait.Until(b, 10*time.Minute, "the registry's first sweep", func() bool {
		return env.Client.Exists(ctx, env.Prefix+":relay:{relay}:due:swept").Val() == 1
	})
	swept := time.Since(start)
	cpu := redistest.CPUPercentOver(b, env.Client, window)

	if _, err := c.SetEndpoint(ctx, relay.Endpoint{Name: "zz", TargetURL: "https://zz.example.com/", Concurrency: 1}); err != nil {
		b.Fatal(err)
	}
	const hold = 2 * time.Second
	slot, err := c.AcquireSlot(ctx, "zz", "never-released", hold)
	if err != nil {
		b.Fatal(err)
	}
	testwait.Until(b, 2*time.Minute, "the slot freed at its expiry", func() bool {
		st, err := c.Stats(ctx, "zz")
		return err == nil && st.SlotsExpired == 1
	})
	freed := time.Since(slot.Expires)

	b.ReportMetric(float64(n), "endpoints")
	b.ReportMetric(cpu, "redis-cpu-%")
	b.ReportMetric(swept.Seconds(), "settle-s")
	b.ReportMetric(float64(freed.Milliseconds()), "slot-free-late-ms")
}
