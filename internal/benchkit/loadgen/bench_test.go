package loadgen

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

// BenchmarkHTTP measures each scenario against a real server on loopback over a real Redis,
// b.N jobs per scenario with 16 clients. Read the jobs/s, p50-ms and p99-ms metrics: ns/op also
// counts the untimed filling of the consume scenarios' queues. The load generator runs in the
// server's process here; docs/benchmarks-http.md measures them as separate processes.
//
// On a shared machine jobs/s moves with whatever else runs; the CPU each side spends per job moves
// much less, so compare builds by it: cpu-µs/job is this process (server and load generator),
// redis-cpu-µs/job is the Redis server's, both over the measured requests only (Config.OnWindow:
// not the untimed filling of a consume scenario's queue). The load generator's own process CPU
// and the server's are one here; bench/nethttp measures them apart, beside a net/http baseline.
//
//	go test -run '^$' -bench HTTP -benchtime 50000x ./internal/loadgen
func BenchmarkHTTP(b *testing.B) {
	for _, api := range []API{Native, Lmstfy} {
		for _, s := range Scenarios {
			b.Run(string(api)+"/"+string(s), func(b *testing.B) {
				srv := servertest.Start(b, server.Config{})
				token := createToken(b, srv.AdminURL, "bench")
				var cpu, rcpu time.Duration
				rep, err := Run(b.Context(), Config{
					URL: srv.PublicURL, API: api, Token: token, Namespace: "bench", Jobs: b.N, Scenarios: []Scenario{s},
					OnWindow: func(Scenario) func() {
						cpu0, redis0 := cpustat.Self(), cpustat.MustRedis(b, srv.Env.Client)
						return func() { cpu, rcpu = cpustat.Self()-cpu0, cpustat.MustRedis(b, srv.Env.Client)-redis0 }
					},
				})
				if err != nil {
					b.Fatal(err)
				}
				r := rep.Results[0]
				b.ReportMetric(r.JobsPerSecond, "jobs/s")
				b.ReportMetric(r.P50Millis, "p50-ms")
				b.ReportMetric(r.P99Millis, "p99-ms")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
				b.ReportMetric(float64(rcpu.Microseconds())/float64(b.N), "redis-cpu-µs/job")
			})
		}
	}
}
