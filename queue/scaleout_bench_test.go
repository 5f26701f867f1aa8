package queue_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// BenchmarkClusterScaleOut is the batched cycle (PublishMany 100, Consume 100, AckMany) from 8
// goroutines over 12 queues on a Redis Cluster of 1, 2 and 3 masters: a queue lives on one
// master (its keys share a hash tag), so queues spread over the shards. docs/benchmarks.md has
// the figures; on a machine with fewer cores than shards plus clients, the cores, not Redis, are
// the limit.
func BenchmarkClusterScaleOut(b *testing.B) {
	for _, shards := range []int{1, 2, 3} {
		b.Run("shards="+strconv.Itoa(shards), func(b *testing.B) {
			url := redistest.StartCluster(b, shards)
			rdb, err := redisx.NewClient(url)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = rdb.Close() })
			c, err := queue.NewClient(rdb, queue.Config{Prefix: "scale"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			benchCycleOverQueues(b, c, 12, 8)
		})
	}
}

// benchCycleOverQueues runs b.N jobs through the batched cycle from workers goroutines, goroutine
// g on queue g mod queues, and reports jobs/s.
func benchCycleOverQueues(b *testing.B, c *queue.Client, queues, workers int) {
	ctx := context.Background()
	const batch = 100
	rounds := b.N/batch + 1
	var next sync.Mutex
	done := 0
	b.ResetTimer()
	var wg sync.WaitGroup
	for g := range workers {
		q := "q" + strconv.Itoa(g%queues)
		ps := make([]queue.PublishParams, batch)
		for i := range ps {
			ps[i] = queue.PublishParams{Namespace: "bench", Queue: q, Payload: payload100}
		}
		wg.Go(func() {
			acks := make([]queue.AckParams, 0, batch)
			for {
				next.Lock()
				if done >= rounds {
					next.Unlock()
					return
				}
				done++
				next.Unlock()
				if _, err := c.PublishMany(ctx, ps); err != nil {
					b.Error(err)
					return
				}
				ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "bench", Queues: []string{q}, Count: batch})
				if err != nil {
					b.Error(err)
					return
				}
				acks = acks[:0]
				for _, d := range ds {
					acks = append(acks, queue.AckParams{Namespace: "bench", Queue: q, ID: d.ID, Delivery: d.Delivery})
				}
				if _, err := c.AckMany(ctx, acks); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(rounds*batch)/b.Elapsed().Seconds(), "jobs/s")
}
