package queue_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testproc"
)

// schedServers are `sluice server` processes of this checkout on one Redis and prefix: every
// instance runs a scheduler, as in production, for the benchmark that fires schedules across
// instances (SLUICE_SCHEDULE_SERVERS=1).
type schedServers struct {
	procs  []*testproc.Process
	admins []string // each one's admin listener, for /metrics
	logs   []string // each one's log file (warnings and errors)
}

// startSchedServers builds the sluice binary and starts n servers on env's Redis and prefix.
func startSchedServers(b *testing.B, env *redistest.Env, n int) *schedServers {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", bin, "github.com/sluicehq/sluice/cmd/sluice")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatalf("go build sluice: %v", err)
	}
	s := &schedServers{}
	for i := range n {
		admin := "127.0.0.1:" + strconv.Itoa(freeLoopbackPort(b))
		logFile := filepath.Join(dir, fmt.Sprintf("server%d.log", i))
		p, err := testproc.Server{
			Command: func(port int) *exec.Cmd {
				cmd := exec.Command(bin, "server", "--redis-url", env.URL, "--prefix", env.Prefix,
					"--public-addr", "127.0.0.1:"+strconv.Itoa(port), "--admin-addr", admin, "--log-level", "warn")
				if f, err := os.Create(logFile); err == nil {
					cmd.Stdout, cmd.Stderr = f, f
				}
				return cmd
			},
			Log: logFile,
			Ready: func(addr string) error {
				resp, err := http.Get("http://" + addr + "/readyz")
				if err != nil {
					return err
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("readyz: %s", resp.Status)
				}
				return nil
			},
			ReadyTimeout: time.Minute,
		}.Start()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Kill)
		s.procs, s.admins, s.logs = append(s.procs, p), append(s.admins, admin), append(s.logs, logFile)
	}
	return s
}

// cpu is the CPU time the servers used so far.
func (s *schedServers) cpu(b *testing.B) time.Duration {
	var sum time.Duration
	for _, p := range s.procs {
		sum += cpustat.MustProcess(b, p.PID())
	}
	return sum
}

// stop ends the servers gracefully and prints how many lines each one logged (warnings and
// errors) and the last of them.
func (s *schedServers) stop() {
	for _, p := range s.procs {
		p.Terminate()
	}
	for i, name := range s.logs {
		b, _ := os.ReadFile(name)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) == 1 && lines[0] == "" {
			continue
		}
		fmt.Printf("server %d logged %d lines; the last: %s\n", i, len(lines), lines[len(lines)-1])
	}
}

// freeLoopbackPort is a loopback port free a moment ago.
func freeLoopbackPort(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// latenessBuckets sums the servers' sluice_schedule_lateness_seconds histograms: upper bound
// (seconds) -> fires at most that late, in increasing order of the bound.
func (s *schedServers) latenessBuckets(ctx context.Context) ([]float64, map[float64]float64, error) {
	counts := map[float64]float64{}
	for _, admin := range s.admins {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics", nil)
		if err != nil {
			return nil, nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			rest, ok := strings.CutPrefix(line, `sluice_schedule_lateness_seconds_bucket{le="`)
			if !ok {
				continue
			}
			le, count, ok := strings.Cut(rest, `"} `)
			if !ok {
				continue
			}
			bound, err1 := strconv.ParseFloat(le, 64)
			n, err2 := strconv.ParseFloat(count, 64)
			if err1 == nil && err2 == nil {
				counts[bound] += n
			}
		}
		_ = resp.Body.Close()
	}
	bounds := make([]float64, 0, len(counts))
	for le := range counts {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	return bounds, counts, nil
}

// histogramQuantile is the upper bound of the bucket that holds the p-quantile of a cumulative
// histogram (the true quantile is at most that).
func histogramQuantile(bounds []float64, cumulative map[float64]float64, p float64) float64 {
	if len(bounds) == 0 {
		return 0
	}
	total := cumulative[bounds[len(bounds)-1]]
	for _, le := range bounds {
		if cumulative[le] >= p*total {
			return le
		}
	}
	return bounds[len(bounds)-1]
}
