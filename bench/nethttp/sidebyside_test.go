package nethttp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/benchkit/loadgen"
	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server"
)

// childEnv selects the server a re-executed test binary runs instead of the tests: "sluice"
// (`sluice server`, the CLI command itself, with the arguments in childArgs) or "nethttp"
// (Baseline). Each server is then a process of its own, so its CPU time can be read apart from
// the load generator's.
const (
	childEnv  = "SLUICE_BENCH_HTTP_CHILD"
	childArgs = "SLUICE_BENCH_HTTP_ARGS" // the CLI's arguments, separated by newlines
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "sluice":
		os.Exit(runSluice())
	case "nethttp":
		os.Exit(runBaseline())
	default:
		redistest.Main(m)
	}
}

// untilStdinCloses returns a context that ends when standard input closes: the parent ended the
// child, or died.
func untilStdinCloses() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx, cancel
}

// runSluice runs `sluice server` as the CLI does, until standard input closes.
func runSluice() int {
	ctx, cancel := untilStdinCloses()
	defer cancel()
	stop, err := startProfile("sluice")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	if err := serveSluice(ctx, strings.Split(os.Getenv(childArgs), "\n")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveSluice runs the server as `sluice server` does (args are "server" and then --flag value
// pairs), until ctx ends.
func serveSluice(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "server" || len(args)%2 != 1 {
		return fmt.Errorf("%s: want server and --flag value pairs, got %q", childArgs, args)
	}
	flags := map[string]string{}
	for i := 1; i < len(args); i += 2 {
		flags[strings.ReplaceAll(strings.TrimPrefix(args[i], "--"), "-", "_")] = args[i+1]
	}
	settings, err := server.LoadSettings(server.SettingsSources{Getenv: os.Getenv, Flags: flags})
	if err != nil {
		return err
	}
	return server.RunSettings(ctx, settings, os.Getenv, os.Stderr)
}

// runBaseline serves Baseline on the address in childArgs until standard input closes.
func runBaseline() int {
	ctx, cancel := untilStdinCloses()
	defer cancel()
	args := strings.Split(os.Getenv(childArgs), "\n") // redis URL, prefix, address
	if len(args) != 3 {
		fmt.Fprintf(os.Stderr, "%s: want redis URL, prefix and address, got %q\n", childArgs, args)
		return 2
	}
	stop, err := startProfile("nethttp")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	rdb, err := redisx.NewClient(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer rdb.Close()
	srv := &http.Server{Addr: args[2], Handler: Baseline(rdb, args[1]), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed { //nolint:errorlint // returned as is
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startProfile writes a CPU profile of the child's whole life to
// $SLUICE_BENCH_CPUPROFILE-<kind>.pprof when that variable is set; stop ends it.
func startProfile(kind string) (stop func(), err error) {
	prefix := os.Getenv("SLUICE_BENCH_CPUPROFILE")
	if prefix == "" {
		return func() {}, nil
	}
	f, err := os.Create(prefix + "-" + kind + ".pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// child is a server process started by startChild.
type child struct {
	kind             string
	pid              int
	public, adminURL string
}

// freeAddr returns a loopback address no one listens on (for a moment: the child takes it).
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startChild starts a server process on env's Redis and prefix and waits until it answers; it
// ends with the test. kind is "sluice" (`sluice server` of this build), "nethttp" (Baseline) or
// the path of a sluice binary (`sluice server` of another build, to compare two builds).
func startChild(tb testing.TB, kind string, env *redistest.Env) *child {
	tb.Helper()
	pub, adm := freeAddr(tb), freeAddr(tb)
	serverArgs := []string{"server", "--redis-url", env.URL, "--prefix", env.Prefix, "--public-addr", pub,
		"--admin-addr", adm, "--log-level", "error"}
	var cmd *exec.Cmd
	switch kind {
	case "sluice":
		cmd = exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), childEnv+"=sluice", childArgs+"="+strings.Join(serverArgs, "\n"))
	case "nethttp":
		cmd = exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), childEnv+"=nethttp", childArgs+"="+strings.Join([]string{env.URL, env.Prefix, pub}, "\n"))
		adm = ""
	default:
		cmd = exec.Command(kind, serverArgs...)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		if kind != "sluice" && kind != "nethttp" {
			_ = cmd.Process.Signal(os.Interrupt) // a sluice binary stops on SIGINT, not on its stdin
		}
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
	c := &child{kind: kind, pid: cmd.Process.Pid, public: "http://" + pub}
	if adm != "" {
		c.adminURL = "http://" + adm
	}
	waitAnswers(tb, c)
	return c
}

// waitAnswers polls the child's public listener until it answers HTTP.
func waitAnswers(tb testing.TB, c *child) {
	tb.Helper()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	testwait.UntilNilEvery(tb, 30*time.Second, 20*time.Millisecond, func() error {
		resp, err := client.Get(c.public + "/healthz")
		if err != nil {
			return fmt.Errorf("%s server at %s does not answer: %w", c.kind, c.public, err)
		}
		return resp.Body.Close()
	})
}

// commandCalls reads the calls of each command from Redis's INFO commandstats.
func commandCalls(tb testing.TB, rdb redis.UniversalClient) map[string]int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			tb.Fatalf("INFO commandstats: %q", line)
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
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
	server, redis, loadgen float64            // CPU µs per job
	calls                  map[string]float64 // Redis commands per job, by name
	requests               int64
	p50, p99               float64 // latency of one cycle (ms), as loadgen.Result has it
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
			c0 := commandCalls(tb, rdb)
			s0, r0, l0 := cpustat.MustProcess(tb, srv.pid), cpustat.MustRedis(tb, rdb), cpustat.Self()
			return func() {
				s1, r1, l1 := cpustat.MustProcess(tb, srv.pid), cpustat.MustRedis(tb, rdb), cpustat.Self()
				f := &figures{
					server: perJob(s1-s0, jobs), redis: perJob(r1-r0, jobs), loadgen: perJob(l1-l0, jobs),
					calls: map[string]float64{},
				}
				for cmd, n := range commandCalls(tb, rdb) {
					if d := n - c0[cmd]; d > 0 && cmd != "info" {
						f.calls[cmd] = float64(d) / float64(jobs)
					}
				}
				out[s] = f
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
		out[r.Scenario].p50, out[r.Scenario].p99 = r.P50Millis, r.P99Millis
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

// BenchmarkSideBySide drives `sluice server` (the CLI command of this build, in a process of its
// own) and the net/http baseline in turns, each round starting with the next one (sluice, baseline;
// baseline, sluice; ...), with the load generator of `sluice bench` on one processor, 16 clients,
// 100-byte payloads: publish, then consume+ack (two requests per job). It logs every round and
// reports the medians: jobs/s of each, the ratio of Sluice's to the baseline's (per round), and
// the CPU per job of each server and of Redis.
//
// b.N is ignored: run with -benchtime 1x. SLUICE_BENCH_JOBS sets the jobs per scenario (default
// 50,000), SLUICE_BENCH_ROUNDS the rounds (default 3), SLUICE_BENCH_SCENARIOS the scenarios
// (default publish,consume-ack; the baseline serves publish, consume and consume-ack),
// SLUICE_BENCH_API=lmstfy drives Sluice's lmstfy-compatible routes (the baseline speaks native).
// SLUICE_BENCH_BEFORE=<sluice binary> adds `sluice server` of another build to the turns, so two
// builds are compared side by side (metrics "before-..."). SLUICE_BENCH_CPUPROFILE=<prefix> has
// this build's server and the baseline write CPU profiles of their whole life to
// <prefix>-sluice.pprof and <prefix>-nethttp.pprof (go tool pprof <file>).
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
	type target struct {
		name string
		srv  *child
		api  loadgen.API
	}
	sl := startChild(b, "sluice", env)
	targets := []target{{"sluice", sl, api}, {"nethttp", startChild(b, "nethttp", env), loadgen.Native}}
	if before := os.Getenv("SLUICE_BENCH_BEFORE"); before != "" {
		targets = append(targets, target{"before", startChild(b, before, env), api})
	}
	token := createToken(b, sl.adminURL, "bench")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))     // as `sluice bench` (--procs 1)
	type round map[string]map[loadgen.Scenario]*figures // by target name
	var results []round
	for b.Loop() {
		for r := range rounds {
			load := loadAverage(b)
			res := round{}
			for i := range targets {
				t := targets[(r+i)%len(targets)]
				res[t.name] = measure(b, t.srv, t.api, token, env.Client, jobs, scenarios)
			}
			for _, s := range scenarios {
				line := fmt.Sprintf("round %d (load %s) %-11s", r+1, load, s)
				for _, t := range targets {
					f := res[t.name][s]
					line += fmt.Sprintf("  %s %6.0f jobs/s (p50/p99 %.2f/%.2f ms; CPU µs/job: server %5.1f, Redis %4.1f, load generator %4.1f; Redis calls/job: %s)",
						t.name, f.jobsPerSecond, f.p50, f.p99, f.server, f.redis, f.loadgen, formatCalls(f.calls))
				}
				fmt.Println(line) // as it comes: benchmark logs are cut after a few lines
			}
			results = append(results, res)
		}
	}
	median := func(get func(round) float64) float64 {
		v := make([]float64, len(results))
		for i, r := range results {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, s := range scenarios {
		for _, t := range targets {
			b.ReportMetric(median(func(r round) float64 { return r[t.name][s].jobsPerSecond }), string(s)+"-"+t.name+"-jobs/s")
			b.ReportMetric(median(func(r round) float64 { return r[t.name][s].server }), string(s)+"-"+t.name+"-server-µs/job")
			b.ReportMetric(median(func(r round) float64 { return r[t.name][s].redis }), string(s)+"-"+t.name+"-redis-µs/job")
		}
		b.ReportMetric(median(func(r round) float64 { return r["sluice"][s].jobsPerSecond / r["nethttp"][s].jobsPerSecond }), string(s)+"-sluice/nethttp")
	}
	b.ReportMetric(0, "ns/op")
}

// formatCalls lists the Redis commands per job, most frequent first.
func formatCalls(calls map[string]float64) string {
	var names []string
	for name, n := range calls {
		if n >= 0.05 { // leave out the background work (maintenance, other servers' housekeeping)
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(calls[b], calls[a]) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, calls[n])
	}
	return strings.Join(parts, ", ")
}

// loadAverage is the machine's load average over the last minute (/proc/loadavg), which says how
// much else shared the cores.
func loadAverage(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Fields(string(b))[0]
}
