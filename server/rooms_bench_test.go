package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/benchkit/httpbench"
	"github.com/sluicehq/sluice/internal/benchkit/splitload"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server/rooms"
)

// roomBenchServer is a server whose public listener serves every host through the room "shop"
// (proxy_rooms "*=shop") in front of an upstream in the same process.
func roomBenchServer(b *testing.B) (base string) {
	b.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	b.Cleanup(up.Close)
	env := redistest.New(b)
	maxActive := 1000
	_, base = startBenchServer(b, Config{
		RedisURL: env.URL, Prefix: env.Prefix,
		ProxyRooms: "*=shop", RoomArrivalsPerMinute: -1, // every visitor comes from one address
		Rooms: map[string]rooms.RoomJSON{"shop": {MaxActive: &maxActive, Upstream: &up.URL}},
	})
	return base
}

// BenchmarkRoomProxyAdmitted measures requests of admitted visitors (valid pass, no Redis call)
// through sluice server's reverse proxy (proxy_rooms) to an upstream, with the server's whole
// middleware stack. 32 × GOMAXPROCS clients on keep-alive connections, written from prepared
// bytes (net/http's client would cost more CPU than the server it measures).
func BenchmarkRoomProxyAdmitted(b *testing.B) {
	base := roomBenchServer(b)
	cookies := httpbench.Visitors(b, base+"/", 200)
	httpbench.Gets(b, base+"/page", cookies, http.StatusOK)
}

// BenchmarkSplitServerProxyVsNginx measures admitted visitors' requests through sluice server's
// room proxy (proxy_rooms: the public listener's lean loop and the server's whole middleware)
// side by side with nginx's own proxy_pass to the same nginx upstream, the load from another
// process, in interleaved rounds (splitload.Versus). lean/op is the share of the room's requests
// the lean loop served. Run it with a fixed count, e.g. -benchtime 20000x.
func BenchmarkSplitServerProxyVsNginx(b *testing.B) {
	up, _ := splitload.NginxUpstream(b)
	gate, gateCPU := splitload.NginxGate(b, up)
	env := redistest.New(b)
	maxActive := 1000
	srv, base := startBenchServer(b, Config{
		RedisURL: env.URL, Prefix: env.Prefix,
		ProxyRooms: "*=shop", RoomArrivalsPerMinute: -1, // every visitor comes from one address
		Rooms: map[string]rooms.RoomJSON{"shop": {MaxActive: &maxActive, Upstream: &up}},
	})
	visitors := httpbench.Visitors(b, base+"/", 500)
	lean0 := srv.leanStats().LeanRequests
	splitload.Versus(b, splitload.Side{URL: base + "/page", Cookies: visitors, CPU: cpustat.Self},
		splitload.Side{URL: gate + "/page", Cookies: []string{""}, CPU: gateCPU})
	requests := b.N*splitload.VersusRounds + min(b.N, 5000) // and the warm-up round
	b.ReportMetric(float64(srv.leanStats().LeanRequests-lean0)/float64(requests), "lean/op")
}
