package loadgen

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/names"
)

// API is the HTTP dialect the load generator speaks.
type API string

const (
	// Native is Sluice's own /v1 API.
	Native API = "native"
	// Lmstfy is the lmstfy-compatible /api routes (Sluice's or a real lmstfy's). lmstfy takes at
	// most 64 jobs per bulk publish and 100 per consume, so Batch must stay within 64.
	Lmstfy API = "lmstfy"
)

// Scenario names one measured workload.
type Scenario string

const (
	// Publish publishes one job per request.
	Publish Scenario = "publish"
	// Consume leases one job per request and does not ack it (the load generator acks the leases
	// after the measurement).
	Consume Scenario = "consume"
	// ConsumeAck leases one job and acks it: two requests per job.
	ConsumeAck Scenario = "consume-ack"
	// BulkPublish publishes Config.Batch jobs per request.
	BulkPublish Scenario = "bulk-publish"
	// BatchConsume leases up to Config.Batch jobs per request.
	BatchConsume Scenario = "batch-consume"
)

// Scenarios lists every scenario in the order Run runs them.
var Scenarios = []Scenario{Publish, Consume, ConsumeAck, BulkPublish, BatchConsume}

// ParseScenarios reads a comma-separated list of scenario names; "all" or "" means every one.
func ParseScenarios(s string) ([]Scenario, error) {
	if s == "" || s == "all" {
		return slices.Clone(Scenarios), nil
	}
	var out []Scenario
	for name := range strings.SplitSeq(s, ",") {
		sc := Scenario(strings.TrimSpace(name))
		if !slices.Contains(Scenarios, sc) {
			return nil, fmt.Errorf("unknown scenario %q (want one of %s)", name, joinScenarios(Scenarios))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

func joinScenarios(ss []Scenario) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// DefaultJobs is the number of jobs per scenario when neither Jobs nor Duration is set.
const DefaultJobs = 50_000

// Config describes a load-generation run. Every field has a default.
type Config struct {
	// URL is the server's public API, and the only address the load generator sends requests to.
	// Default "http://127.0.0.1:7777".
	URL string

	// API is the dialect to speak. Default Native.
	API API

	// Token is sent as "Authorization: Bearer" (native) or X-Token (lmstfy). Default none.
	Token string

	// Namespace holds the bench queues. Default "default".
	Namespace string

	// Queue starts the name of every queue the run uses; each scenario gets a queue of its own,
	// named Queue-<scenario>-<run id>. Default "bench".
	Queue string

	// Clients is the number of concurrent keep-alive HTTP clients. Default 16.
	Clients int

	// Jobs bounds the jobs of each scenario. Default DefaultJobs when Duration is 0, otherwise no
	// bound.
	Jobs int

	// Duration bounds the time of each scenario. Default 0: no bound (Jobs bounds the run).
	Duration time.Duration

	// BodySize is the size of each job's payload in bytes. Default 100.
	BodySize int

	// Batch is the number of jobs per request in bulk publish and batch consume. Default 64.
	Batch int

	// Scenarios are the workloads to measure, run in the order of the Scenarios variable.
	// Default all.
	Scenarios []Scenario

	// JobTTL is the lifetime of the published jobs, so that whatever a duration-bounded run leaves
	// in its queues goes away by itself. Default 10m.
	JobTTL time.Duration

	// OnResult, when set, is called with each scenario's result as soon as it is measured.
	OnResult func(Result)

	// Processes names processes on this machine (the server, Redis) whose CPU time each result
	// reports per job (Result.CPU), read from /proc/<pid>/stat (Linux) over the scenario's
	// measured requests, with the load generator's own under SelfProcess. Default none: no CPU
	// figures.
	Processes map[string]int

	// OnWindow, when set, is called as each scenario's measured window opens (after any untimed
	// filling of its queue), and the function it returns as the window closes (before the untimed
	// acks of a consume scenario). A caller reads CPU counters there, so that they cover exactly
	// the measured requests.
	OnWindow func(Scenario) (closed func())
}

// maxBatch is the server's limit on jobs per bulk publish and consume.
const maxBatch = 1000

func (c Config) withDefaults() Config {
	c.URL = strings.TrimRight(cmp.Or(c.URL, "http://127.0.0.1:7777"), "/")
	c.API = cmp.Or(c.API, Native)
	c.Namespace = cmp.Or(c.Namespace, "default")
	c.Queue = cmp.Or(c.Queue, "bench")
	c.Clients = cmp.Or(c.Clients, 16)
	if c.Jobs == 0 && c.Duration == 0 {
		c.Jobs = DefaultJobs
	}
	c.BodySize = cmp.Or(c.BodySize, 100)
	c.Batch = cmp.Or(c.Batch, 64)
	if len(c.Scenarios) == 0 {
		c.Scenarios = slices.Clone(Scenarios)
	}
	c.JobTTL = cmp.Or(c.JobTTL, 10*time.Minute)
	return c
}

func (c Config) validate() error {
	var errs []error
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("config: URL %q must be an http:// or https:// address", c.URL))
	}
	if c.API != Native && c.API != Lmstfy {
		errs = append(errs, fmt.Errorf("config: API %q must be %q or %q", c.API, Native, Lmstfy))
	}
	for _, n := range []struct{ field, v string }{{"Namespace", c.Namespace}, {"Queue", c.Queue}} {
		if !names.Valid(n.v, 200) {
			errs = append(errs, fmt.Errorf("config: %s %q must match ^[-_A-Za-z0-9]+$ and be at most 200 bytes", n.field, n.v))
		}
	}
	if c.Clients < 1 || c.Clients > 10_000 {
		errs = append(errs, fmt.Errorf("config: Clients must be 1..10000, got %d", c.Clients))
	}
	if c.Jobs < 0 {
		errs = append(errs, fmt.Errorf("config: Jobs must not be negative, got %d", c.Jobs))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("config: Duration must not be negative, got %v", c.Duration))
	}
	if c.BodySize < 1 || c.BodySize > 1<<20 {
		errs = append(errs, fmt.Errorf("config: BodySize must be 1..1048576, got %d", c.BodySize))
	}
	if c.Batch < 1 || c.Batch > maxBatch {
		errs = append(errs, fmt.Errorf("config: Batch must be 1..%d, got %d", maxBatch, c.Batch))
	}
	if c.API == Lmstfy && c.Batch > 64 {
		errs = append(errs, fmt.Errorf("config: Batch must be at most 64 with the lmstfy API, got %d", c.Batch))
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios, s) {
			errs = append(errs, fmt.Errorf("config: unknown scenario %q", s))
		}
	}
	for name, pid := range c.Processes {
		if name == "" || name == SelfProcess || pid <= 0 {
			errs = append(errs, fmt.Errorf("config: Processes: %q=%d must name a process (not %q) by a positive pid", name, pid, SelfProcess))
		} else if _, err := cpustat.Process(pid); err != nil {
			errs = append(errs, fmt.Errorf("config: Processes: %s: %w", name, err))
		}
	}
	if c.JobTTL < time.Second {
		errs = append(errs, fmt.Errorf("config: JobTTL must be at least 1s, got %v", c.JobTTL))
	}
	return errors.Join(errs...)
}
