package waitroom_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/benchkit/httpbench"
	"github.com/sluicehq/sluice/internal/testkit/nginxtest"
	"github.com/sluicehq/sluice/waitroom"
)

// The split benchmarks measure the proxy alone: the upstream is nginx answering "ok" from memory
// and the load comes from another process (this test binary started again as a load client), so
// the CPU time of the benchmark's own process (cpu-µs/op) is the proxy's, the room's pass check
// and net/http's server and client work, kernel time included. upstream-cpu-µs/op and
// client-cpu-µs/op are what nginx and the load client spent. On a machine where the three share
// the cores, req/s is what they reach together; 2 cores ÷ cpu-µs/op is what the proxy would do
// with the node to itself.

// loadClientEnv names the environment variable that makes the test binary a load client:
// "url|requests|connections|cookie file".
const loadClientEnv = "SLUICE_WAITROOM_LOAD_CLIENT"

// loadClientMain sends the requests (GET url, with the cookies of the file's lines in turn, one per
// connection) over keep-alive connections from prepared bytes, and returns the exit code.
func loadClientMain(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		fmt.Fprintln(os.Stderr, "load client: bad spec", spec)
		return 2
	}
	u, err := url.Parse(parts[0])
	n, err2 := strconv.ParseInt(parts[1], 10, 64)
	conns, err3 := strconv.Atoi(parts[2])
	file, err4 := os.ReadFile(parts[3])
	if err != nil || err2 != nil || err3 != nil || err4 != nil {
		fmt.Fprintln(os.Stderr, "load client: bad spec", spec)
		return 2
	}
	cookies := strings.Split(strings.TrimRight(string(file), "\n"), "\n")
	var left atomic.Int64
	left.Store(n)
	var failed atomic.Value
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			if err := loadConn(u, cookies[i%len(cookies)], &left); err != nil {
				failed.Store(err)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		fmt.Fprintln(os.Stderr, "load client:", err)
		return 1
	}
	return 0
}

func loadConn(u *url.URL, cookie string, left *atomic.Int64) error {
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		return err
	}
	defer conn.Close()
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n"
	if cookie != "" {
		req += "Cookie: " + cookie + "\r\n"
	}
	raw := []byte(req + "Accept: application/json\r\n\r\n")
	br := bufio.NewReader(conn)
	for left.Add(-1) >= 0 {
		if _, err := conn.Write(raw); err != nil {
			return err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	return nil
}

// nginxUpstream runs nginx (one process) answering every request with 200 "ok" from memory and
// returns its URL and a function reporting its CPU time. A missing nginx fails the benchmark.
func nginxUpstream(b *testing.B) (string, func() time.Duration) {
	b.Helper()
	listen, pid := nginxtest.Run(b, 4096, func(listen string) (string, map[string]string) {
		return `keepalive_requests 100000000;
    server {
        listen ` + listen + `;
        location / { default_type text/plain; return 200 "ok"; }
    }`, map[string]string{}
	})
	return "http://" + listen, func() time.Duration { return cpustat.MustProcess(b, pid) }
}

// runSplit sends b.N requests to siteURL from a load client process and reports req/s and the
// CPU time per request of this process (the proxy), of the upstream and of the client.
func runSplit(b *testing.B, siteURL string, cookies []string, upstreamCPU func() time.Duration) {
	b.Helper()
	file := cookieFile(b, cookies)
	b.ResetTimer()
	cpu0, up0 := cpustat.Self(), upstreamCPU()
	elapsed, client := loadRound(b, siteURL, file, b.N)
	cpu, up := cpustat.Self()-cpu0, upstreamCPU()-up0
	b.StopTimer()
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(perOp(cpu), "cpu-µs/op")
	b.ReportMetric(perOp(up), "upstream-cpu-µs/op")
	b.ReportMetric(perOp(client), "client-cpu-µs/op")
}

// cookieFile writes the load client's cookies, one visitor a line.
func cookieFile(b *testing.B, cookies []string) string {
	b.Helper()
	file := filepath.Join(b.TempDir(), "cookies")
	if err := os.WriteFile(file, []byte(strings.Join(cookies, "\n")+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return file
}

// splitConns is how many keep-alive connections the load client keeps busy.
const splitConns = 64

// loadRound sends n requests to siteURL from a load client process (with the cookie file's
// visitors) and returns how long they took and the client's CPU time.
func loadRound(b *testing.B, siteURL, cookieFile string, n int) (elapsed, clientCPU time.Duration) {
	b.Helper()
	start := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d|%s", loadClientEnv, siteURL, n, splitConns, cookieFile))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("load client: %v: %s", err, out.String())
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkSplitAdmittedProxy: admitted visitors' requests through the room's proxy served by a
// ProxyServer (its lean loop, the upstream client's lean path) to nginx, the load from another
// process. lean/op is the share of requests the lean loop served.
func BenchmarkSplitAdmittedProxy(b *testing.B) {
	up, upCPU := nginxUpstream(b)
	_, room, redisCalls := benchRoom(b, waitroom.Config{}, waitroom.RoomConfig{MaxActive: 1000, Upstream: up})
	site := serveProxy(b, room, nil)
	visitors := httpbench.Visitors(b, site.URL, 500)
	calls0, lean0 := redisCalls(), site.Server.Stats().LeanRequests
	runSplit(b, site.URL, visitors, upCPU)
	reportRedisCalls(b, redisCalls, calls0)
	b.ReportMetric(float64(site.Server.Stats().LeanRequests-lean0)/float64(b.N), "lean/op")
}

// BenchmarkSplitBareLeanProxy: the room proxy's upstream client with no room, to nginx.
func BenchmarkSplitBareLeanProxy(b *testing.B) {
	up, upCPU := nginxUpstream(b)
	u, err := url.Parse(up)
	if err != nil {
		b.Fatal(err)
	}
	site := httptest.NewServer(waitroom.NewLeanProxy(u))
	defer site.Close()
	runSplit(b, site.URL, []string{""}, upCPU)
}

// BenchmarkSplitBareProxy: a plain httputil.ReverseProxy (the path the room's proxy took before,
// and still takes for upgrades) to nginx.
func BenchmarkSplitBareProxy(b *testing.B) {
	up, upCPU := nginxUpstream(b)
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
	runSplit(b, site.URL, []string{""}, upCPU)
}
