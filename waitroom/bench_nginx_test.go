package waitroom_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/benchkit/httpbench"
	"github.com/sluicehq/sluice/internal/benchkit/splitload"
	"github.com/sluicehq/sluice/waitroom"
)

// BenchmarkSplitProxyVsNginx measures admitted visitors' requests through the room's proxy
// (a ProxyServer) side by side with nginx's own proxy_pass to the same nginx upstream (answering
// "ok" from memory), the load from another process (64 keep-alive connections), in interleaved
// rounds (splitload.Versus): the median, lowest and highest ratio of the room's req/s to nginx's,
// each side's median req/s and each proxy's own CPU per request. Run it with a fixed count, e.g.
// -benchtime 50000x.
func BenchmarkSplitProxyVsNginx(b *testing.B) {
	up, _ := splitload.NginxUpstream(b)
	gate, gateCPU := splitload.NginxGate(b, up)
	_, room, redisCalls := benchRoom(b, waitroom.Config{}, waitroom.RoomConfig{MaxActive: 1000, Upstream: up})
	site := serveProxy(b, room, nil)
	visitors := httpbench.Visitors(b, site.URL, 500)
	calls0 := redisCalls()
	splitload.Versus(b, splitload.Side{URL: site.URL, Cookies: visitors, CPU: cpustat.Self},
		splitload.Side{URL: gate, Cookies: []string{""}, CPU: gateCPU})
	requests := b.N*splitload.VersusRounds + min(b.N, 5000) // and the warm-up round
	b.ReportMetric(float64(redisCalls()-calls0-1)/float64(requests), "redis-calls/op")
}
