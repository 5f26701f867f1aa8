package waitroom_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/benchkit/httpbench"
	"github.com/sluicehq/sluice/internal/testkit/nginxtest"
	"github.com/sluicehq/sluice/waitroom"
)

// nginxProxyRounds is how many interleaved rounds BenchmarkSplitProxyVsNginx runs; each round
// sends b.N requests through each proxy, in alternating order.
const nginxProxyRounds = 6

// BenchmarkSplitProxyVsNginx measures admitted visitors' requests through the room's proxy side
// by side with nginx's own proxy_pass to the same nginx upstream (answering "ok" from memory),
// the load from another process (the split load client, 64 keep-alive connections), in
// interleaved rounds: on a shared machine only a ratio taken round by round means something.
// It reports the median, lowest and highest ratio of the room's req/s to nginx's, each side's
// median req/s, and each proxy's own CPU per request. nginx runs one worker (no master
// process), with an upstream keep-alive pool and the X-Forwarded-* headers the room's proxy sets.
// Run it with a fixed count, e.g. -benchtime 50000x.
func BenchmarkSplitProxyVsNginx(b *testing.B) {
	up, _ := nginxUpstream(b)
	upAddr := strings.TrimPrefix(up, "http://")
	gate, gatePID := nginxtest.Run(b, 4096, func(listen string) (string, map[string]string) {
		return `keepalive_requests 100000000;
    upstream app {
        server ` + upAddr + `;
        keepalive 128;
        keepalive_requests 100000000;
    }
    server {
        listen ` + listen + `;
        location / {
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Host $host;
            proxy_set_header X-Forwarded-Proto $scheme;
        }
    }`, nil
	})
	_, room, redisCalls := benchRoom(b, waitroom.Config{}, waitroom.RoomConfig{MaxActive: 1000, Upstream: up})
	site := serveProxy(b, room, nil)
	roomCookies := cookieFile(b, httpbench.Visitors(b, site.URL, 500))
	nginxCookies := cookieFile(b, []string{""})

	type side struct {
		url, cookies string
		cpu          func() time.Duration
		reqs, cpuOp  []float64
	}
	roomSide := &side{url: site.URL, cookies: roomCookies, cpu: cpustat.Self}
	nginxSide := &side{url: "http://" + gate, cookies: nginxCookies, cpu: func() time.Duration { return cpustat.MustProcess(b, gatePID) }}
	// A warm-up round each: connections, pools, caches.
	loadRound(b, roomSide.url, roomSide.cookies, min(b.N, 5000))
	loadRound(b, nginxSide.url, nginxSide.cookies, min(b.N, 5000))
	calls0 := redisCalls()
	b.ResetTimer()
	var ratios []float64
	for round := range nginxProxyRounds {
		order := []*side{roomSide, nginxSide}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			cpu0 := s.cpu()
			elapsed, _ := loadRound(b, s.url, s.cookies, b.N)
			s.reqs = append(s.reqs, float64(b.N)/elapsed.Seconds())
			s.cpuOp = append(s.cpuOp, float64((s.cpu()-cpu0).Microseconds())/float64(b.N))
		}
		ratios = append(ratios, roomSide.reqs[round]/nginxSide.reqs[round])
	}
	b.StopTimer()
	b.ReportMetric(medianOf(ratios), "ratio-median")
	b.ReportMetric(slices.Min(ratios), "ratio-min")
	b.ReportMetric(slices.Max(ratios), "ratio-max")
	b.ReportMetric(medianOf(roomSide.reqs), "room-req/s")
	b.ReportMetric(medianOf(nginxSide.reqs), "nginx-req/s")
	b.ReportMetric(medianOf(roomSide.cpuOp), "room-cpu-µs/op")
	b.ReportMetric(medianOf(nginxSide.cpuOp), "nginx-cpu-µs/op")
	b.ReportMetric(float64(redisCalls()-calls0-1)/float64(b.N*nginxProxyRounds), "redis-calls/op")
	b.Logf("ratios by round: %s", formatRatios(ratios))
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func formatRatios(v []float64) string {
	parts := make([]string, len(v))
	for i, r := range v {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, " ")
}
