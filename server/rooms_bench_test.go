package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
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
		ProxyRooms: "*=shop",
		Rooms:      map[string]rooms.RoomJSON{"shop": {MaxActive: &maxActive, Upstream: &up.URL}},
	})
	return base
}

// BenchmarkRoomProxyAdmitted measures requests of admitted visitors (valid pass, no Redis call)
// through sluice server's reverse proxy (proxy_rooms) to an upstream, with the server's whole
// middleware stack. 32 × GOMAXPROCS clients on keep-alive connections, written from prepared
// bytes (net/http's client would cost more CPU than the server it measures).
func BenchmarkRoomProxyAdmitted(b *testing.B) {
	base := roomBenchServer(b)
	u, _ := url.Parse(base)
	cookies := make([]string, 200)
	for i := range cookies {
		resp, err := http.Get(base + "/") //nolint:noctx // benchmark setup
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		var parts []string
		for _, c := range resp.Cookies() {
			parts = append(parts, c.Name+"="+c.Value)
		}
		cookies[i] = strings.Join(parts, "; ")
	}
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		req := []byte("GET /page HTTP/1.1\r\nHost: " + u.Host + "\r\nCookie: " + cookies[int(next.Add(1))%len(cookies)] + "\r\n\r\n")
		br := bufio.NewReader(conn)
		for pb.Next() {
			if _, err := conn.Write(req); err != nil {
				b.Error(err)
				return
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}
