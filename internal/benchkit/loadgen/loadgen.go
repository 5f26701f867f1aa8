// Package loadgen is the HTTP load generator behind `sluice bench`: it publishes and consumes jobs
// through a Sluice server's native API (or the lmstfy-compatible one) with many keep-alive clients
// and reports jobs per second and request latency for each scenario.
//
// Every run is bounded (by a job count, a duration or both) and sends requests only to the URL it
// is given. It uses queues of its own, acks what it leases, and publishes jobs with a TTL, so it
// leaves nothing behind for long.
package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Result is the measurement of one scenario.
type Result struct {
	Scenario Scenario `json:"scenario"`
	// Jobs is the number of jobs published or consumed; Requests the HTTP requests it took.
	Jobs     int64 `json:"jobs"`
	Requests int64 `json:"requests"`
	// Seconds is the wall time from the first request to the last response.
	Seconds       float64 `json:"seconds"`
	JobsPerSecond float64 `json:"jobs_per_second"`
	// Latency of one cycle in milliseconds: one request, or for consume-ack the consume request
	// and its ack.
	P50Millis float64 `json:"p50_ms"`
	P99Millis float64 `json:"p99_ms"`
	MaxMillis float64 `json:"max_ms"`
	// Skipped says why the scenario did not run (the API lacks it); Note remarks on a run that
	// ended early (the queue ran dry).
	Skipped string `json:"skipped,omitempty"`
	Note    string `json:"note,omitempty"`
	// CPU is the CPU time of each process of Config.Processes, and of the load generator
	// (SelfProcess), per job over the measured requests, in microseconds.
	CPU map[string]float64 `json:"cpu_us_per_job,omitempty"`
}

// Report is the outcome of a run.
type Report struct {
	URL       string   `json:"url"`
	API       API      `json:"api"`
	Namespace string   `json:"namespace"`
	Clients   int      `json:"clients"`
	Jobs      int      `json:"jobs_limit,omitempty"`
	Duration  string   `json:"duration_limit,omitempty"`
	BodySize  int      `json:"body_bytes"`
	Batch     int      `json:"batch"`
	Results   []Result `json:"results"`
}

// Run measures cfg.Scenarios one after the other and returns their results. When ctx ends or a
// request fails, it stops and returns the results measured so far with the error.
//
// The consume scenarios need ready jobs: consume reads the queue the publish scenario filled, and
// batch-consume the one bulk-publish filled; without those (and always for consume-ack) a queue is
// filled first, untimed, with Jobs jobs, or when only Duration bounds the run, as many jobs as the
// fastest publish scenario managed (100,000 when none ran).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r, err := newRun(cfg)
	if err != nil {
		return nil, err
	}
	defer r.close()
	rep := &Report{
		URL: cfg.URL, API: cfg.API, Namespace: cfg.Namespace, Clients: cfg.Clients, Jobs: cfg.Jobs,
		BodySize: cfg.BodySize, Batch: cfg.Batch,
	}
	if cfg.Duration > 0 {
		rep.Duration = cfg.Duration.String()
	}
	for _, s := range Scenarios {
		if !slices.Contains(cfg.Scenarios, s) {
			continue
		}
		res, err := r.scenario(ctx, s)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", s, err)
		}
		rep.Results = append(rep.Results, res)
		if cfg.OnResult != nil {
			cfg.OnResult(res)
		}
	}
	return rep, nil
}

// filled is a queue holding jobs ready for a consume scenario.
type filled struct {
	queue string
	jobs  int64
}

type run struct {
	cfg     Config
	api     dialect
	id      string
	conns   []*httpConn
	filled  map[Scenario]filled
	maxFill int64
}

func newRun(cfg Config) (*run, error) {
	var id [4]byte
	_, _ = rand.Read(id[:])
	payload := strings.Repeat("x", cfg.BodySize)
	r := &run{cfg: cfg, id: hex.EncodeToString(id[:]), filled: map[Scenario]filled{}}
	target, err := newEndpoint(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("config: URL: %w", err)
	}
	if cfg.API == Lmstfy {
		r.api = newLmstfy(cfg, payload)
		if cfg.Token != "" {
			target.authLines = "X-Token: " + cfg.Token + "\r\n"
		}
	} else {
		r.api = newNative(cfg, payload)
		if cfg.Token != "" {
			target.authLines = "Authorization: Bearer " + cfg.Token + "\r\n"
		}
	}
	r.conns = make([]*httpConn, cfg.Clients)
	for i := range r.conns {
		r.conns[i] = &httpConn{target: target}
	}
	return r, nil
}

// close closes the clients' connections.
func (r *run) close() {
	for _, c := range r.conns {
		c.close()
	}
}

func (r *run) queueName(s Scenario) string { return r.cfg.Queue + "-" + string(s) + "-" + r.id }

func (r *run) scenario(ctx context.Context, s Scenario) (Result, error) {
	switch s {
	case Publish:
		q := r.queueName(s)
		res, _, err := r.measure(ctx, s, r.budget(), func(ctx context.Context, c *httpConn, n int, _ *[]lease) (int, int, error) {
			return 1, 1, r.api.publish(ctx, c, q)
		}, 1)
		r.filled[Publish] = filled{q, res.Jobs}
		r.maxFill = max(r.maxFill, res.Jobs)
		return res, err
	case BulkPublish:
		if !r.api.hasBulk() {
			return Result{Scenario: s, Skipped: "the " + string(r.cfg.API) + " API has no bulk publish"}, nil
		}
		q := r.queueName(s)
		res, _, err := r.measure(ctx, s, r.budget(), func(ctx context.Context, c *httpConn, n int, _ *[]lease) (int, int, error) {
			return n, 1, r.api.bulkPublish(ctx, c, q, n)
		}, r.cfg.Batch)
		if err != nil && noBulkRoute(err) {
			return Result{Scenario: s, Skipped: "the server has no bulk publish route (HTTP 404)"}, nil
		}
		r.filled[BulkPublish] = filled{q, res.Jobs}
		r.maxFill = max(r.maxFill, res.Jobs)
		return res, err
	case Consume, BatchConsume:
		src, from, step := Publish, r.queueName(s), 1
		if s == BatchConsume {
			src, step = BulkPublish, r.cfg.Batch
		}
		f, ok := r.filled[src]
		delete(r.filled, src)
		if !ok {
			var err error
			if f, err = r.prefill(ctx, from); err != nil {
				return Result{Scenario: s}, err
			}
		}
		res, leases, err := r.measure(ctx, s, r.budget(), func(ctx context.Context, c *httpConn, n int, held *[]lease) (int, int, error) {
			before := len(*held)
			var err error
			*held, err = r.api.consume(ctx, c, f.queue, n, *held)
			return len(*held) - before, 1, err
		}, step)
		if err != nil {
			return res, err
		}
		return res, r.finish(ctx, leases)
	case ConsumeAck:
		f, err := r.prefill(ctx, r.queueName(s))
		if err != nil {
			return Result{Scenario: s}, err
		}
		res, _, err := r.measure(ctx, s, r.budget(), func(ctx context.Context, c *httpConn, n int, held *[]lease) (int, int, error) {
			got, err := r.api.consume(ctx, c, f.queue, 1, (*held)[:0])
			*held = got
			if err != nil || len(got) == 0 {
				return 0, 1, err
			}
			return 1, 2, r.api.ack(ctx, c, got[0])
		}, 1)
		return res, err
	}
	return Result{}, fmt.Errorf("unknown scenario %q", s)
}

// budget bounds one scenario by the configured count and duration.
func (r *run) budget() *budget {
	b := &budget{limited: r.cfg.Jobs > 0}
	b.left.Store(int64(r.cfg.Jobs))
	if r.cfg.Duration > 0 {
		b.deadline = time.Now().Add(r.cfg.Duration)
	}
	return b
}

// prefilling names the untimed filling of a queue in measure; it opens no window (Config.OnWindow).
const prefilling Scenario = "prefill"

// prefill publishes the jobs a consume scenario reads, untimed, and returns the queue.
func (r *run) prefill(ctx context.Context, q string) (filled, error) {
	n := int64(r.cfg.Jobs)
	if n == 0 {
		n = r.maxFill
	}
	if n == 0 {
		n = 100_000
	}
	err := r.fill(ctx, q, n, r.api.hasBulk())
	if err != nil && noBulkRoute(err) {
		// An lmstfy server older than its bulk route (1.0 has none): no job was published, so the
		// queue is filled one job per request instead.
		err = r.fill(ctx, q, n, false)
	}
	if err != nil {
		return filled{}, fmt.Errorf("fill queue %s: %w", q, err)
	}
	return filled{q, n}, nil
}

// fill publishes n jobs to q, untimed, in bulk requests of Config.Batch jobs or one per request.
func (r *run) fill(ctx context.Context, q string, n int64, bulk bool) error {
	b := &budget{limited: true}
	b.left.Store(n)
	step := 1
	if bulk {
		step = r.cfg.Batch
	}
	_, _, err := r.measure(ctx, prefilling, b, func(ctx context.Context, c *httpConn, k int, _ *[]lease) (int, int, error) {
		if step == 1 {
			return 1, 1, r.api.publish(ctx, c, q)
		}
		return k, 1, r.api.bulkPublish(ctx, c, q, k)
	}, step)
	return err
}

// noBulkRoute reports whether err is a server's 404 for a bulk publish: a route it does not have.
func noBulkRoute(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == http.StatusNotFound && strings.Contains(se.Path, "/bulk")
}

// finish acks the leases a consume scenario took, untimed, so its jobs do not linger.
func (r *run) finish(ctx context.Context, leases [][]lease) error {
	var next atomic.Int64
	var all []lease
	for _, l := range leases {
		all = append(all, l...)
	}
	err := r.parallel(ctx, func(ctx context.Context, i int) error {
		for {
			k := next.Add(1) - 1
			if k >= int64(len(all)) {
				return nil
			}
			if err := r.api.ack(ctx, r.conns[i], all[k]); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return fmt.Errorf("ack the consumed jobs: %w", err)
	}
	return nil
}

// cycle does one unit of a scenario's work for at most n jobs and returns the jobs it moved
// (0 when the queue is empty) and the requests it sent. Consumers append their leases to held.
type cycle func(ctx context.Context, c *httpConn, n int, held *[]lease) (jobs, requests int, err error)

// measure runs op on every client until the budget is spent or the queue runs dry, asking for
// step jobs per cycle, and returns the result and the leases each client holds.
func (r *run) measure(ctx context.Context, s Scenario, b *budget, op cycle, step int) (Result, [][]lease, error) {
	type tally struct {
		h              histogram
		jobs, requests int64
		dry            bool
		held           []lease
	}
	tallies := make([]tally, len(r.conns))
	var closed func()
	if r.cfg.OnWindow != nil && s != prefilling {
		closed = r.cfg.OnWindow(s)
	}
	var cpu0 map[string]time.Duration
	meter := cpuMeter{pids: r.cfg.Processes}
	if len(r.cfg.Processes) > 0 && s != prefilling {
		var err error
		if cpu0, err = meter.read(); err != nil {
			return Result{Scenario: s}, nil, err
		}
	}
	start := time.Now()
	err := r.parallel(ctx, func(ctx context.Context, i int) error {
		t := &tallies[i]
		for {
			want := b.take(step)
			if want == 0 {
				return nil
			}
			t0 := time.Now()
			got, reqs, err := op(ctx, r.conns[i], want, &t.held)
			t.h.record(time.Since(t0))
			t.jobs += int64(got)
			t.requests += int64(reqs)
			if err != nil {
				return err
			}
			if got < want {
				b.giveBack(want - got)
			}
			if got == 0 {
				t.dry = true
				return nil
			}
		}
	})
	elapsed := time.Since(start)
	var cpu1 map[string]time.Duration
	if cpu0 != nil {
		var cpuErr error
		if cpu1, cpuErr = meter.read(); cpuErr != nil && err == nil {
			err = cpuErr
		}
	}
	if closed != nil {
		closed()
	}
	var h histogram
	res := Result{Scenario: s, Seconds: elapsed.Seconds()}
	leases := make([][]lease, len(tallies))
	dry := false
	for i := range tallies {
		t := &tallies[i]
		h.merge(&t.h)
		res.Jobs += t.jobs
		res.Requests += t.requests
		dry = dry || t.dry
		leases[i] = t.held
	}
	if elapsed > 0 {
		res.JobsPerSecond = float64(res.Jobs) / elapsed.Seconds()
	}
	if cpu1 != nil {
		res.CPU = perJob(cpu0, cpu1, res.Jobs)
	}
	res.P50Millis = millis(h.quantile(0.50))
	res.P99Millis = millis(h.quantile(0.99))
	res.MaxMillis = millis(h.max)
	if dry && (b.limited && b.left.Load() > 0 || !b.limited) {
		res.Note = fmt.Sprintf("the queue ran dry after %d jobs", res.Jobs)
	}
	return res, leases, err
}

func millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// parallel runs fn once per client and returns the first error; an error cancels the others.
func (r *run) parallel(ctx context.Context, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range r.conns {
		wg.Go(func() {
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		})
	}
	wg.Wait()
	return first
}

// budget hands out the jobs of a scenario to its clients.
type budget struct {
	limited  bool
	left     atomic.Int64
	deadline time.Time
}

// take claims up to n jobs; 0 means the scenario is over.
func (b *budget) take(n int) int {
	if !b.deadline.IsZero() && !time.Now().Before(b.deadline) {
		return 0
	}
	if !b.limited {
		return n
	}
	for {
		left := b.left.Load()
		if left <= 0 {
			return 0
		}
		k := min(left, int64(n))
		if b.left.CompareAndSwap(left, left-k) {
			return int(k)
		}
	}
}

func (b *budget) giveBack(n int) {
	if b.limited {
		b.left.Add(int64(n))
	}
}
