package waitroom_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/sluicehq/sluice/internal/benchkit/httpbench"
	"github.com/sluicehq/sluice/internal/benchkit/splitload"
	"github.com/sluicehq/sluice/waitroom"
)

// The split benchmarks measure the proxy alone (internal/benchkit/splitload): the upstream is
// nginx answering "ok" from memory and the load comes from another process, so the CPU time of
// the benchmark's own process (cpu-µs/op) is the proxy's, the room's pass check and net/http's
// server and client work, kernel time included. upstream-cpu-µs/op and client-cpu-µs/op are what
// nginx and the load client spent. On a machine where the three share the cores, req/s is what
// they reach together; 2 cores ÷ cpu-µs/op is what the proxy would do with the node to itself.

// BenchmarkSplitAdmittedProxy: admitted visitors' requests through the room's proxy served by a
// ProxyServer (its lean loop, the upstream client's lean path) to nginx, the load from another
// process. lean/op is the share of requests the lean loop served.
func BenchmarkSplitAdmittedProxy(b *testing.B) {
	up, upCPU := splitload.NginxUpstream(b)
	_, room, redisCalls := benchRoom(b, waitroom.Config{}, waitroom.RoomConfig{MaxActive: 1000, Upstream: up})
	site := serveProxy(b, room, nil)
	visitors := httpbench.Visitors(b, site.URL, 500)
	calls0, lean0 := redisCalls(), site.Server.Stats().LeanRequests
	splitload.Run(b, site.URL, visitors, upCPU)
	reportRedisCalls(b, redisCalls, calls0)
	b.ReportMetric(float64(site.Server.Stats().LeanRequests-lean0)/float64(b.N), "lean/op")
}

// BenchmarkSplitBareLeanProxy: the room proxy's upstream client with no room, to nginx.
func BenchmarkSplitBareLeanProxy(b *testing.B) {
	up, upCPU := splitload.NginxUpstream(b)
	u, err := url.Parse(up)
	if err != nil {
		b.Fatal(err)
	}
	site := httptest.NewServer(waitroom.NewLeanProxy(u))
	defer site.Close()
	splitload.Run(b, site.URL, []string{""}, upCPU)
}

// BenchmarkSplitBareProxy: a plain httputil.ReverseProxy (the path the room's proxy took before,
// and still takes for upgrades) to nginx.
func BenchmarkSplitBareProxy(b *testing.B) {
	up, upCPU := splitload.NginxUpstream(b)
	u, err := url.Parse(up)
	if err != nil {
		b.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	defer tr.CloseIdleConnections()
	rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.SetXForwarded()
	}}
	site := httptest.NewServer(rp)
	defer site.Close()
	splitload.Run(b, site.URL, []string{""}, upCPU)
}
