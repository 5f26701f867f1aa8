// Package httpbench drives HTTP servers in benchmarks from prepared bytes on keep-alive
// connections: net/http's client would cost more CPU than the server it measures.
package httpbench

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
)

// Gets sends GET url with the visitors' cookies from 32 × GOMAXPROCS goroutines, each on its own
// keep-alive connection, and reports requests per second and this process's CPU per request (the
// load generator's, and the server's when it runs in the process). The requests are written from
// prepared bytes and the answers read with http.ReadResponse: net/http's client costs more CPU
// than the server it would measure, on the same cores. Every answer must have status want.
func Gets(b *testing.B, rawURL string, cookies []string, want int) {
	b.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpustat.Self()
	b.RunParallel(func(pb *testing.PB) {
		cookie := cookies[int(next.Add(1))%len(cookies)]
		conn, err := (&net.Dialer{}).DialContext(b.Context(), "tcp", u.Host)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		req := []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nCookie: " + cookie +
			"\r\nAccept: application/json\r\n\r\n")
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
			_ = resp.Body.Close()
			if resp.StatusCode != want {
				b.Errorf("status %d, want %d", resp.StatusCode, want)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	b.ReportMetric(float64((cpustat.Self()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}
