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
// maintenance pass of the queues, endpoints and rooms makes one. The index holds entries due in an
// hour for a number of things, spread over the hash slots: on a standalone Redis one key; on a
// Cluster ("every-shard") all 16,384 shards, which a pass reads until a sweep has announced every
// registered thing's slot (the read before the slots in use existed), and ("slots-in-use") only
// the shards of the slots announced. SLUICE_BENCH_DUE_IDLE sets the many things of the "many"
// cases (default 10,000). It reports the wall time of a pass (ns/op), the shards read and Redis's
// own CPU time per pass (INFO cpu, summed over the masters): times the passes a second of the
// maintainers, that is Redis's idle CPU. docs/benchmarks.md has the figures and the command.
func BenchmarkDuePass(b *testing.B) {
	many, _ := strconv.Atoi(cmp.Or(os.Getenv("SLUICE_BENCH_DUE_IDLE"), "10000"))
	b.Run("standalone/many", func(b *testing.B) { benchDuePass(b, redistest.New(b), many, true) })
	cluster := redistest.NewCluster(b)
	b.Run("cluster/every-shard/many", func(b *testing.B) { benchDuePass(b, cluster, many, false) })
	for _, n := range []int{10, 1000, many} {
		b.Run("cluster/slots-in-use/"+strconv.Itoa(n), func(b *testing.B) { benchDuePass(b, cluster, n, true) })
	}
}

// benchDuePass fills a new index with things entries due in an hour, their slots announced and,
// when marked, the announcement marked complete, and times passes that find nothing due.
func benchDuePass(b *testing.B, env *redistest.Env, things int, marked bool) {
	ctx := context.Background()
	base := env.Prefix + ":due:" + strconv.Itoa(things) + ":" + strconv.FormatBool(marked)
	later := float64(time.Now().Add(time.Hour).UnixMilli())
	pipe := env.Client.Pipeline()
	for i := range things {
		thing := "{q" + strconv.Itoa(i) + "}"
		pipe.ZAdd(ctx, Key(base, thing, env.Cluster), redis.Z{Score: later, Member: thing})
		_ = Announce(ctx, pipe, base, env.Cluster, thing)
	}
	if marked {
		_ = MarkAnnounced(ctx, pipe, base, env.Cluster)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	_, shards, err := timeAndShards(ctx, env.Client, base, env.Cluster)
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := redistest.CPUSeconds(b, env.Client)
	b.ResetTimer()
	for b.Loop() {
		if _, due, err := Due(ctx, env.Client, base, env.Cluster, 1000); err != nil || len(due) != 0 {
			b.Fatalf("Due = %v, %v; want nothing due", due, err)
		}
	}
	b.StopTimer()
	cpu := redistest.CPUSeconds(b, env.Client) - cpu0
	b.ReportMetric(float64(len(shards)), "shards")
	b.ReportMetric(cpu*1e3/float64(b.N), "redis-cpu-ms/pass")
}
