package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/internal/benchkit/loadgen"
)

func runBench(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "bench", "[flags]", `
Measure a Sluice server over HTTP: publish, consume, consume+ack, bulk publish and batch consume,
one scenario after the other, each with -c keep-alive clients, for -n jobs or -d time (whichever
ends first), with 100-byte payloads. Prints jobs/s and the p50/p99 latency of one request (of the
consume and its ack for consume-ack).

The load generator runs on --procs processors (default 1): on the machine it measures it takes as
little of it as it can; raise it to drive a remote server with many clients. It sends requests
only to --url, uses queues of its own (bench-<scenario>-<id>), acks every job it consumes and
publishes jobs with a 10-minute TTL, so it leaves nothing behind for long. Consume scenarios read what the publish scenarios published; consume-ack (and a consume
scenario whose publisher was not selected) first fills its queue, untimed.

Examples:
  sluice bench
  sluice bench -c 32 -n 200000 --scenarios publish,consume-ack
  sluice bench -d 10s --json
  sluice bench --api lmstfy --url http://127.0.0.1:7777`)
	url := fs.String("url", cmp.Or(env.Getenv("SLUICE_URL"), defaultURL), "server's public API `URL` (env SLUICE_URL); the only address requests go to")
	token := fs.String("token", env.Getenv("SLUICE_TOKEN"), "namespace `token` (env SLUICE_TOKEN)")
	ns := fs.String("ns", cmp.Or(env.Getenv("SLUICE_NAMESPACE"), defaultNamespace), "`namespace` (env SLUICE_NAMESPACE)")
	clients := fs.Int("c", 16, "concurrent keep-alive `clients`")
	jobs := fs.Int("n", 0, "`jobs` per scenario (default 50000 when -d is not given)")
	dur := fs.Duration("d", 0, "`duration` of each scenario (default: bounded by -n only)")
	api := fs.String("api", string(loadgen.Native), "HTTP `API`: native or lmstfy")
	scenarios := fs.String("scenarios", "all", "comma-separated `list` of publish, consume, consume-ack, bulk-publish, batch-consume")
	body := fs.Int("body", 100, "payload size in `bytes`")
	batch := fs.Int("batch", 64, "jobs per request of bulk-publish and batch-consume")
	queue := fs.String("queue", "bench", "queue name `prefix`")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	procs := fs.Int("procs", 1, "`processors` the load generator runs on (0: all of them)")
	cpu := fs.String("cpu", "", "report the CPU per job of these processes on this machine, as `name=pid,...` (e.g. server=PID,redis=PID; Linux), and of the load generator")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	list, err := loadgen.ParseScenarios(*scenarios)
	if err != nil {
		return usagef("--scenarios: %v", err)
	}
	if *api != string(loadgen.Native) && *api != string(loadgen.Lmstfy) {
		return usagef("--api %q: want native or lmstfy", *api)
	}
	if *jobs < 0 || *dur < 0 || *procs < 0 {
		return usagef("-n, -d and --procs must not be negative")
	}
	processes, err := parseProcesses(*cpu)
	if err != nil {
		return usagef("--cpu: %v", err)
	}
	if *procs > 0 && env.SetProcs != nil {
		defer env.SetProcs(env.SetProcs(*procs))
	}
	cfg := loadgen.Config{
		URL: *url, API: loadgen.API(*api), Token: *token, Namespace: *ns, Queue: *queue,
		Clients: *clients, Jobs: *jobs, Duration: *dur, BodySize: *body, Batch: *batch, Scenarios: list,
		Processes: processes,
	}
	if !*asJSON {
		limit := fmt.Sprintf("%d jobs", cmp.Or(*jobs, loadgen.DefaultJobs))
		switch {
		case *dur > 0 && *jobs > 0:
			limit = fmt.Sprintf("%d jobs or %v", *jobs, *dur)
		case *dur > 0:
			limit = dur.String()
		}
		fmt.Fprintf(env.Stdout, "sluice bench: %s, %s API, %d clients, %s per scenario, %d-byte payloads\n\n",
			*url, *api, *clients, limit, *body)
		t := newBenchTable(env.Stdout)
		cfg.OnResult = t.add
	}
	rep, runErr := loadgen.Run(ctx, cfg)
	if *asJSON && rep != nil {
		if err := printValue(env.Stdout, rep); err != nil {
			return err
		}
	}
	if errors.Is(runErr, syscall.ECONNREFUSED) {
		return (&apiClient{api: &publicAPI, base: *url}).transportError(runErr)
	}
	return runErr
}

// benchTable prints scenario results as they come.
type benchTable struct {
	w       io.Writer
	printed bool
}

func newBenchTable(w io.Writer) *benchTable { return &benchTable{w: w} }

func (t *benchTable) add(r loadgen.Result) {
	if !t.printed {
		fmt.Fprintf(t.w, "%-14s %9s %9s %8s %10s %9s %9s\n", "scenario", "jobs", "requests", "seconds", "jobs/s", "p50 ms", "p99 ms")
		t.printed = true
	}
	if r.Skipped != "" {
		fmt.Fprintf(t.w, "%-14s skipped: %s\n", r.Scenario, r.Skipped)
		return
	}
	fmt.Fprintf(t.w, "%-14s %9d %9d %8.2f %10s %9.2f %9.2f\n", r.Scenario, r.Jobs, r.Requests, r.Seconds,
		strconv.FormatFloat(r.JobsPerSecond, 'f', 0, 64), r.P50Millis, r.P99Millis)
	if len(r.CPU) > 0 {
		names := slices.Sorted(maps.Keys(r.CPU))
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf("%s %.1f", n, r.CPU[n])
		}
		fmt.Fprintf(t.w, "%-14s CPU µs per job: %s\n", "", strings.Join(parts, ", "))
	}
	if r.Note != "" {
		fmt.Fprintf(t.w, "%-14s note: %s\n", "", r.Note)
	}
}

// parseProcesses reads --cpu's name=pid list ("" is none).
func parseProcesses(s string) (map[string]int, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]int{}
	for item := range strings.SplitSeq(s, ",") {
		name, pid, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(pid)
		if !ok || name == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: want name=pid", item)
		}
		out[name] = n
	}
	return out, nil
}
