package duework

import (
	"cmp"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// BenchmarkDuePass measures what one read of the due index costs with nothing due, as every
// maintenance pass of the queues, endpoints and rooms makes one: on a standalone Redis one key, on
// a Cluster its 16,384 shards (one per hash slot) in one pipelined round trip. The index holds
// SLUICE_BENCH_DUE_IDLE entries (default 10,000) due in an hour, spread over the shards. It
// reports the wall time of a pass (ns/op) and Redis's own CPU time per pass (INFO cpu, summed over
// the masters): times the passes a second of the maintainers, that is Redis's idle CPU.
// docs/benchmarks.md has the figures and the command.
func BenchmarkDuePass(b *testing.B) {
	b.Run("standalone", func(b *testing.B) { benchDuePass(b, redistest.New(b)) })
	b.Run("cluster", func(b *testing.B) { benchDuePass(b, redistest.NewCluster(b)) })
}

func benchDuePass(b *testing.B, env *redistest.Env) {
	ctx := context.Background()
	base := env.Prefix + ":due"
	idle, _ := strconv.Atoi(cmp.Or(os.Getenv("SLUICE_BENCH_DUE_IDLE"), "10000"))
	later := float64(time.Now().Add(time.Hour).UnixMilli())
	pipe := env.Client.Pipeline()
	for i := range idle {
		thing := "{q" + strconv.Itoa(i) + "}"
		pipe.ZAdd(ctx, Key(base, thing, env.Cluster), redis.Z{Score: later, Member: thing})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	shards := Shards(base, env.Cluster)
	cpu0 := redistest.CPUSeconds(b, env.Client)
	b.ResetTimer()
	for b.Loop() {
		if _, due, err := Due(ctx, env.Client, shards, 1000); err != nil || len(due) != 0 {
			b.Fatalf("Due = %v, %v; want nothing due", due, err)
		}
	}
	b.StopTimer()
	cpu := redistest.CPUSeconds(b, env.Client) - cpu0
	b.ReportMetric(float64(len(shards)), "shards")
	b.ReportMetric(cpu*1e3/float64(b.N), "redis-cpu-ms/pass")
}
