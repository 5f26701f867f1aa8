package loadgen

import (
	"testing"
)

// BenchmarkHTTP measures each scenario against a real server on loopback over a real Redis,
// b.N jobs per scenario with 16 clients. Read the jobs/s, p50-ms and p99-ms metrics: ns/op also
// counts the untimed filling of the consume scenarios' queues. The load generator runs in the
// server's process here; docs/benchmarks-http.md measures them as separate processes.
//
//	go test -run '^$' -bench HTTP -benchtime 50000x ./internal/loadgen
func BenchmarkHTTP(b *testing.B) {
	for _, api := range []API{Native, Lmstfy} {
		for _, s := range Scenarios {
			b.Run(string(api)+"/"+string(s), func(b *testing.B) {
				tg := setup(b)
				rep, err := Run(b.Context(), Config{
					URL: tg.URL, API: api, Token: tg.Token, Namespace: "bench", Jobs: b.N, Scenarios: []Scenario{s},
				})
				if err != nil {
					b.Fatal(err)
				}
				r := rep.Results[0]
				b.ReportMetric(r.JobsPerSecond, "jobs/s")
				b.ReportMetric(r.P50Millis, "p50-ms")
				b.ReportMetric(r.P99Millis, "p99-ms")
			})
		}
	}
}
