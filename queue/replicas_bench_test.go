package queue_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// BenchmarkPublishReplicaAcks is single Publish calls from 16 goroutines through a Sentinel set
// (primary and one replica on loopback), without and with ReplicaAcks 1: the cost of waiting for
// the replica (docs/benchmarks.md).
func BenchmarkPublishReplicaAcks(b *testing.B) {
	set := redistest.StartSentinel(b)
	rdb, err := redisx.NewClient(set.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rdb.Close() })
	for _, acks := range []int{0, 1} {
		b.Run("replica_acks="+strconv.Itoa(acks), func(b *testing.B) {
			c, err := queue.NewClient(rdb, queue.Config{Prefix: "acks" + strconv.Itoa(acks), ReplicaAcks: acks})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			ctx := context.Background()
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "bench", Queue: "q", Payload: payload100}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
