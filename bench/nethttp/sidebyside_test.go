package nethttp

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/loadgen"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/server"
)

// childEnv selects the server a re-executed test binary runs instead of the tests: "sluice" (the
// server package, as `sluice server` runs it) or "nethttp" (Baseline). Each server is then a
// process of its own, so its CPU time can be read apart from the load generator's.
const childEnv = "SLUICE_BENCH_HTTP_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "sluice", "nethttp":
		os.Exit(serveChild(os.Getenv(childEnv)))
	default:
		redistest.Main(m)
	}
}

// serveChild runs one server on loopback until its standard input closes (the parent ended it or
// died). It prints "ready <public URL> <admin URL>" once it listens.
func serveChild(kind string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	redisURL, prefix := os.Getenv("CHILD_REDIS_URL"), os.Getenv("CHILD_PREFIX")
	var lc net.ListenConfig
	pub, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if kind == "nethttp" {
		rdb, err := redisx.NewClient(redisURL)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer rdb.Close()
		srv := &http.Server{Handler: Baseline(rdb, prefix), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			<-ctx.Done()
			_ = srv.Close()
		}()
		fmt.Printf("ready http://%s -\n", pub.Addr())
		if err := srv.Serve(pub); err != http.ErrServerClosed { //nolint:errorlint // Serve returns it as is
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	adm, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := server.New(ctx, server.Config{
		RedisURL: redisURL, Prefix: prefix, Out: io.Discard,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if path := os.Getenv("SLUICE_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	fmt.Printf("ready http://%s http://%s\n", pub.Addr(), adm.Addr())
	serveErr := srv.Serve(ctx, pub, adm)
	if err := cmp.Or(serveErr, srv.Close()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child is a server process started by startChild.
type child struct {
	kind             string
	pid              int
	public, adminURL string
}

// startChild starts a server process on env's Redis and prefix; it ends with the test.
func startChild(tb testing.TB, kind string, env *redistest.Env) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+kind, "CHILD_REDIS_URL="+env.URL, "CHILD_PREFIX="+env.Prefix)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 || f[0] != "ready" {
		tb.Fatalf("%s server said %q, %v", kind, line, err)
	}
	return &child{kind: kind, pid: cmd.Process.Pid, public: f[1], adminURL: f[2]}
}

// cpu is the user and system CPU time the process has used, from /proc/<pid>/stat (utime and
// stime, in the kernel's USER_HZ ticks of 10 ms).
func (c *child) cpu(tb testing.TB) time.Duration {
	tb.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(c.pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command name, which is in parentheses: state is field 3, utime 14.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: %q", c.pid, stat)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is the user and system CPU time of this process: the load generator.
func selfCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU is the user and system CPU time the Redis server has used (INFO cpu).
func redisCPU(tb testing.TB, rdb redis.UniversalClient) time.Duration {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("INFO cpu %s: %v", k, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// createToken makes a namespace token through the admin API and returns its secret.
func createToken(tb testing.TB, adminURL, ns string) string {
	tb.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, adminURL+"/v1/namespaces/"+ns+"/tokens", strings.NewReader(`{}`))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		tb.Fatalf("create token: %v", err)
	}
	defer resp.Body.Close()
	var ans struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != http.StatusCreated || ans.Token == "" {
		tb.Fatalf("create token: HTTP %d, %v", resp.StatusCode, err)
	}
	return ans.Token
}

// figures is one scenario's measurement against one server.
type figures struct {
	jobsPerSecond          float64
	server, redis, loadgen float64 // CPU µs per job
	requests               int64
}

// measure runs the scenarios against srv in api and returns each one's jobs/s and the CPU per
// job of the server process, Redis and the load generator over exactly its measured requests.
func measure(tb testing.TB, srv *child, api loadgen.API, token string, rdb redis.UniversalClient, jobs int, scenarios []loadgen.Scenario) map[loadgen.Scenario]*figures {
	tb.Helper()
	name := srv.kind
	out := map[loadgen.Scenario]*figures{}
	rep, err := loadgen.Run(context.Background(), loadgen.Config{
		URL: srv.public, API: api, Token: token, Namespace: "bench", Jobs: jobs, Scenarios: scenarios,
		OnWindow: func(s loadgen.Scenario) func() {
			s0, r0, l0 := srv.cpu(tb), redisCPU(tb, rdb), selfCPU(tb)
			return func() {
				s1, r1, l1 := srv.cpu(tb), redisCPU(tb, rdb), selfCPU(tb)
				out[s] = &figures{
					server: perJob(s1-s0, jobs), redis: perJob(r1-r0, jobs), loadgen: perJob(l1-l0, jobs),
				}
			}
		},
	})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	for _, r := range rep.Results {
		if r.Jobs != int64(jobs) || r.Note != "" {
			tb.Fatalf("%s %s: moved %d of %d jobs (%s)", name, r.Scenario, r.Jobs, jobs, r.Note)
		}
		out[r.Scenario].jobsPerSecond = r.JobsPerSecond
		out[r.Scenario].requests = r.Requests
	}
	return out
}

func perJob(d time.Duration, jobs int) float64 { return float64(d.Microseconds()) / float64(jobs) }

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkSideBySide drives `sluice server` (the server package in a process of its own) and the
// net/http baseline in turns (sluice, baseline; then baseline, sluice; ...) with the load
// generator of `sluice bench` on one processor, 16 clients, 100-byte payloads: publish, then
// consume+ack (two requests per job). It logs every round and reports the medians: jobs/s of each,
// their ratio (sluice ÷ baseline, per round), and the CPU per job of each server and of Redis.
// b.N is ignored: run with -benchtime 1x. SLUICE_BENCH_JOBS sets the jobs per scenario (default
// 50,000), SLUICE_BENCH_ROUNDS the rounds (default 3), SLUICE_BENCH_SCENARIOS the scenarios
// (default publish,consume-ack; the baseline serves publish, consume and consume-ack),
// SLUICE_BENCH_API=lmstfy drives Sluice's lmstfy-compatible routes (the baseline speaks native);
// SLUICE_BENCH_CPUPROFILE=<file> has the
// Sluice server write a CPU profile of its whole life there (go tool pprof <file>).
//
//	cd bench && go test -run '^$' -bench SideBySide -benchtime 1x ./nethttp/
func BenchmarkSideBySide(b *testing.B) {
	jobs, rounds := envInt("SLUICE_BENCH_JOBS", 50_000), envInt("SLUICE_BENCH_ROUNDS", 3)
	scenarios := []loadgen.Scenario{loadgen.Publish, loadgen.ConsumeAck}
	if list := os.Getenv("SLUICE_BENCH_SCENARIOS"); list != "" {
		var err error
		if scenarios, err = loadgen.ParseScenarios(list); err != nil {
			b.Fatalf("SLUICE_BENCH_SCENARIOS: %v", err)
		}
	}
	api := loadgen.API(cmp.Or(os.Getenv("SLUICE_BENCH_API"), string(loadgen.Native)))
	env := redistest.New(b)
	sl := startChild(b, "sluice", env)
	base := startChild(b, "nethttp", env)
	token := createToken(b, sl.adminURL, "bench")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as `sluice bench` (--procs 1)
	type pair struct{ sluice, base map[loadgen.Scenario]*figures }
	var pairs []pair
	for b.Loop() {
		for round := range rounds {
			var p pair
			runSluice := func() { p.sluice = measure(b, sl, api, token, env.Client, jobs, scenarios) }
			runBase := func() { p.base = measure(b, base, loadgen.Native, "", env.Client, jobs, scenarios) }
			if round%2 == 0 {
				runSluice()
				runBase()
			} else {
				runBase()
				runSluice()
			}
			for _, s := range scenarios {
				sf, bf := p.sluice[s], p.base[s]
				b.Logf("round %d %-11s sluice %6.0f jobs/s (CPU µs/job: server %5.1f, redis %4.1f, load generator %4.1f)  nethttp %6.0f jobs/s (%5.1f, %4.1f, %4.1f)  ratio %.2f",
					round+1, s, sf.jobsPerSecond, sf.server, sf.redis, sf.loadgen, bf.jobsPerSecond, bf.server, bf.redis, bf.loadgen,
					sf.jobsPerSecond/bf.jobsPerSecond)
			}
			pairs = append(pairs, p)
		}
	}
	for _, s := range scenarios {
		median := func(get func(pair) float64) float64 {
			v := make([]float64, len(pairs))
			for i, p := range pairs {
				v[i] = get(p)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		name := string(s)
		b.ReportMetric(median(func(p pair) float64 { return p.sluice[s].jobsPerSecond }), name+"-sluice-jobs/s")
		b.ReportMetric(median(func(p pair) float64 { return p.base[s].jobsPerSecond }), name+"-nethttp-jobs/s")
		b.ReportMetric(median(func(p pair) float64 { return p.sluice[s].jobsPerSecond / p.base[s].jobsPerSecond }), name+"-ratio")
		b.ReportMetric(median(func(p pair) float64 { return p.sluice[s].server }), name+"-sluice-server-µs/job")
		b.ReportMetric(median(func(p pair) float64 { return p.sluice[s].redis }), name+"-sluice-redis-µs/job")
		b.ReportMetric(median(func(p pair) float64 { return p.base[s].server }), name+"-nethttp-server-µs/job")
		b.ReportMetric(median(func(p pair) float64 { return p.base[s].redis }), name+"-nethttp-redis-µs/job")
	}
	b.ReportMetric(0, "ns/op")
}
