// Package splitload runs split benchmarks of HTTP proxies: the load comes from another process
// (the test binary started again as a load client) and the upstream is nginx answering "ok" from
// memory, so the CPU time of the benchmark's own process is the proxy's alone. Versus measures a
// proxy side by side with nginx's own proxy_pass to the same upstream, in interleaved rounds: on
// a shared machine only a ratio taken round by round means something.
//
// A test binary that runs these benchmarks calls MaybeClient first thing in its TestMain.
package splitload

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/nginxtest"
)

// clientEnv names the environment variable that makes the test binary a load client:
// "url|requests|connections|cookie file".
const clientEnv = "SLUICE_SPLIT_LOAD_CLIENT"

// Conns is how many keep-alive connections the load client keeps busy.
const Conns = 64

// MaybeClient makes this process the load client and exits when the benchmark started it as one;
// else it returns at once.
func MaybeClient() {
	if spec := os.Getenv(clientEnv); spec != "" {
		os.Exit(clientMain(spec))
	}
}

// clientMain sends the requests (GET url, with the cookies of the file's lines in turn, one per
// connection) over keep-alive connections from prepared bytes, and returns the exit code.
func clientMain(spec string) int {
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

// NginxUpstream runs nginx (one process) answering every request with 200 "ok" from memory and
// returns its URL and a function reporting its CPU time. A missing nginx fails the benchmark.
func NginxUpstream(b *testing.B) (string, func() time.Duration) {
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

// NginxGate runs nginx (one worker, no master process) as a reverse proxy to upstream, with an
// upstream keep-alive pool and the X-Forwarded-* headers a room's proxy sets, and returns its
// URL and a function reporting its CPU time.
func NginxGate(b *testing.B, upstream string) (string, func() time.Duration) {
	b.Helper()
	upAddr := strings.TrimPrefix(upstream, "http://")
	gate, pid := nginxtest.Run(b, 4096, func(listen string) (string, map[string]string) {
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
	return "http://" + gate, func() time.Duration { return cpustat.MustProcess(b, pid) }
}

// Run sends b.N requests to siteURL from a load client process (the cookies one per connection,
// in turn) and reports req/s and the CPU time per request of this process (the proxy), of the
// upstream and of the client.
func Run(b *testing.B, siteURL string, cookies []string, upstreamCPU func() time.Duration) {
	b.Helper()
	file := CookieFile(b, cookies)
	b.ResetTimer()
	cpu0, up0 := cpustat.Self(), upstreamCPU()
	elapsed, client := Round(b, siteURL, file, b.N)
	cpu, up := cpustat.Self()-cpu0, upstreamCPU()-up0
	b.StopTimer()
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(perOp(cpu), "cpu-µs/op")
	b.ReportMetric(perOp(up), "upstream-cpu-µs/op")
	b.ReportMetric(perOp(client), "client-cpu-µs/op")
}

// CookieFile writes the load client's cookies, one visitor a line.
func CookieFile(b *testing.B, cookies []string) string {
	b.Helper()
	file := filepath.Join(b.TempDir(), "cookies")
	if err := os.WriteFile(file, []byte(strings.Join(cookies, "\n")+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	return file
}

// Round sends n requests to siteURL from a load client process (with the cookie file's
// visitors) and returns how long they took and the client's CPU time.
func Round(b *testing.B, siteURL, cookieFile string, n int) (elapsed, clientCPU time.Duration) {
	b.Helper()
	start := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d|%s", clientEnv, siteURL, n, Conns, cookieFile))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("load client: %v: %s", err, out.String())
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// Side is one proxy of a Versus run: its URL, the cookies of its visitors and its CPU time.
type Side struct {
	URL     string
	Cookies []string
	CPU     func() time.Duration
}

// VersusRounds is how many interleaved rounds Versus runs; each round sends b.N requests through
// each side, in alternating order.
const VersusRounds = 6

// Versus measures proxy and nginx side by side: a warm-up round each, then VersusRounds rounds
// of b.N requests each in alternating order. It reports the median, lowest and highest ratio of
// proxy's req/s to nginx's, each side's median req/s ("room-req/s", "nginx-req/s") and CPU per
// request, and logs the ratio of every round.
func Versus(b *testing.B, proxy, nginx Side) {
	b.Helper()
	type side struct {
		Side
		file        string
		reqs, cpuOp []float64
	}
	room := &side{Side: proxy, file: CookieFile(b, proxy.Cookies)}
	gate := &side{Side: nginx, file: CookieFile(b, nginx.Cookies)}
	// A warm-up round each: connections, pools, caches.
	Round(b, room.URL, room.file, min(b.N, 5000))
	Round(b, gate.URL, gate.file, min(b.N, 5000))
	b.ResetTimer()
	var ratios []float64
	for round := range VersusRounds {
		order := []*side{room, gate}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			cpu0 := s.CPU()
			elapsed, _ := Round(b, s.URL, s.file, b.N)
			s.reqs = append(s.reqs, float64(b.N)/elapsed.Seconds())
			s.cpuOp = append(s.cpuOp, float64((s.CPU()-cpu0).Microseconds())/float64(b.N))
		}
		ratios = append(ratios, room.reqs[round]/gate.reqs[round])
	}
	b.StopTimer()
	b.ReportMetric(median(ratios), "ratio-median")
	b.ReportMetric(slices.Min(ratios), "ratio-min")
	b.ReportMetric(slices.Max(ratios), "ratio-max")
	b.ReportMetric(median(room.reqs), "room-req/s")
	b.ReportMetric(median(gate.reqs), "nginx-req/s")
	b.ReportMetric(median(room.cpuOp), "room-cpu-µs/op")
	b.ReportMetric(median(gate.cpuOp), "nginx-cpu-µs/op")
	parts := make([]string, len(ratios))
	for i, r := range ratios {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	b.Logf("ratios by round: %s", strings.Join(parts, " "))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
