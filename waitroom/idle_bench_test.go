package waitroom_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// BenchmarkIdleRooms measures what many idle rooms cost while a Maintainer runs with its defaults
// (a pass every second): SLUICE_BENCH_IDLE_ROOMS rooms (default 10,000) that hold nobody, then
// Redis's CPU over SLUICE_BENCH_IDLE_WINDOW (default 1m, longer than the waits between re-checks so that they
// are counted; INFO CPU, summed over the masters of a
// cluster), then how late after its queue_timeout (1 s) a waiting visitor who never polls again,
// in a room created last, leaves the line. It waits for the rooms set's first sweep first (its
// mark), as the queues' benchmark does. docs/benchmarks.md has the figures and the command.
func BenchmarkIdleRooms(b *testing.B) {
	b.Run("standalone", func(b *testing.B) { benchIdleRooms(b, redistest.New(b)) })
	b.Run("cluster", func(b *testing.B) { benchIdleRooms(b, redistest.NewCluster(b)) })
}

func benchIdleRooms(b *testing.B, env *redistest.Env) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_BENCH_IDLE_ROOMS"))
	n = cmp.Or(n, 10000)
	window, _ := time.ParseDuration(os.Getenv("SLUICE_BENCH_IDLE_WINDOW"))
	window = cmp.Or(window, time.Minute)
	ctx := context.Background()
	c := newClient(b, env, waitroom.Config{})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := c.SetRoom(ctx, fmt.Sprintf("idle%05d", i), waitroom.RoomConfig{MaxActive: 1}); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	m := waitroom.NewMaintainer(c, waitroom.MaintainerConfig{})
	start := time.Now()
	if err := m.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Stop)
	testwait.Until(b, 10*time.Minute, "the rooms set's first sweep", func() bool {
		return env.Client.Exists(ctx, env.Prefix+":waitroom:due:swept").Val() == 1
	})
	swept := time.Since(start)
	cpu := redistest.CPUPercentOver(b, env.Client, window)

	const timeout = time.Second
	if _, err := c.SetRoom(ctx, "zz", waitroom.RoomConfig{MaxActive: 1, QueueTimeout: timeout, SessionTimeout: time.Hour}); err != nil {
		b.Fatal(err)
	}
	r, err := c.Room("zz")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Arrive(ctx, "in"); err != nil {
		b.Fatal(err)
	}
	arrived := time.Now()
	if st, err := r.Arrive(ctx, "gone"); err != nil || st.State != waitroom.Waiting {
		b.Fatalf("second visitor: %+v, %v; want waiting", st, err)
	}
	testwait.Until(b, 2*time.Minute, "the silent visitor gone from the line", func() bool {
		st, err := r.Stats(ctx)
		return err == nil && st.Waiting == 0
	})
	left := time.Since(arrived.Add(timeout))

	b.ReportMetric(float64(n), "rooms")
	b.ReportMetric(cpu, "redis-cpu-%")
	b.ReportMetric(swept.Seconds(), "settle-s")
	b.ReportMetric(float64(left.Milliseconds()), "silent-visitor-late-ms")
}
