//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// workerEnv, when set, makes the test binary a worker process: it consumes the queue its JSON
// value (a workerSpec) names until it is killed.
const workerEnv = "SLUICE_CHAOS_WORKER"

// workerSpec tells a worker process where to consume.
type workerSpec struct {
	URL    string `json:"url"`
	Prefix string `json:"prefix"`
	NS     string `json:"ns"`
	Queue  string `json:"queue"`
}

// job is the payload of every chaos job: an id the run tracks from publish to processing.
type job struct {
	ID string `json:"id"`
}

// quiet drops go-redis's own log lines: every kill makes each pool print its failed dials, which
// would bury the figures the suite prints.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(runWorker(spec))
	}
	redistest.Main(m)
}

// seenKey counts the deliveries each job id got that ran the handler to the end; holderKey names,
// per id, the worker process (pid) whose handler last started it; redeliveredKey holds, per id,
// "pid:unix-ms": the worker that had the job before and when a later delivery reached a handler.
func seenKey(s workerSpec) string        { return s.Prefix + ":chaos:{" + s.Queue + "}:seen" }
func holderKey(s workerSpec) string      { return s.Prefix + ":chaos:{" + s.Queue + "}:holder" }
func redeliveredKey(s workerSpec) string { return s.Prefix + ":chaos:{" + s.Queue + "}:redelivered" }

// runWorker is a worker process: the queue SDK with 16 handlers and a 2s lease, so a job held by
// a killed worker runs elsewhere about 2s later. It records each handled delivery in Redis.
func runWorker(raw string) int {
	var s workerSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintln(os.Stderr, "worker spec:", err)
		return 2
	}
	rdb, err := redisx.NewClient(s.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := queue.NewClient(rdb, queue.Config{Prefix: s.Prefix, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	q, err := queue.NewQueue[job](c, s.NS, s.Queue, queue.QueueConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	pid := strconv.Itoa(os.Getpid())
	err = q.Consume(ctx, func(ctx context.Context, j *job) error {
		d, _ := queue.DeliveryFromContext(ctx)
		if d.Delivery > 1 {
			prev, _ := rdb.HGet(ctx, holderKey(s), j.ID).Result()
			rdb.HSetNX(ctx, redeliveredKey(s), j.ID, prev+":"+strconv.FormatInt(time.Now().UnixMilli(), 10))
		}
		if err := rdb.HSet(ctx, holderKey(s), j.ID, pid).Err(); err != nil {
			return err
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // the job's work
		return rdb.HIncrBy(ctx, seenKey(s), j.ID, 1).Err()
	}, queue.ConsumeConfig{
		Concurrency: 16,
		TTR:         2 * time.Second,
		RetryPolicy: queue.RetryPolicyFunc(func(int, error) time.Duration { return 100 * time.Millisecond }),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// rig is one scenario: a queue, its worker processes, the kills and the published job ids.
type rig struct {
	t      *testing.T
	name   string
	spec   workerSpec
	rdb    redis.UniversalClient
	client *queue.Client

	mu        sync.Mutex
	kills     []time.Time
	killedPID map[string]time.Time // worker pid → when it was killed
	published map[string]bool      // ids whose publish was acknowledged
}

func newRig(t *testing.T, name, url string) *rig {
	t.Helper()
	rdb, err := redisx.NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	spec := workerSpec{URL: url, Prefix: "chaos", NS: "chaos", Queue: name}
	c, err := queue.NewClient(rdb, queue.Config{Prefix: spec.Prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rig{t: t, name: name, spec: spec, rdb: rdb, client: c, published: map[string]bool{}, killedPID: map[string]time.Time{}}
}

// published records an acknowledged publish.
func (r *rig) acknowledged(id string) {
	r.mu.Lock()
	r.published[id] = true
	r.mu.Unlock()
}

func (r *rig) killed() {
	r.mu.Lock()
	r.kills = append(r.kills, time.Now())
	r.mu.Unlock()
}

// killedWorker records the kill of a worker process.
func (r *rig) killedWorker(w *worker) {
	r.mu.Lock()
	r.killedPID[strconv.Itoa(w.cmd.Process.Pid)] = time.Now()
	r.mu.Unlock()
	r.killed()
}

// worker is one worker process.
type worker struct{ cmd *exec.Cmd }

// startWorker starts a worker process: this test binary again, told by workerEnv to consume.
func (r *rig) startWorker() *worker {
	r.t.Helper()
	spec, _ := json.Marshal(r.spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start worker: %v", err)
	}
	w := &worker{cmd: cmd}
	r.t.Cleanup(w.kill)
	return w
}

// kill SIGKILLs the worker and reaps it.
func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	_, _ = w.cmd.Process.Wait()
}

// drained reports whether every acknowledged job was handled and nothing is left in the queue.
func (r *rig) drained(ctx context.Context) bool {
	s, err := r.client.Stats(ctx, r.spec.NS, r.spec.Queue)
	if err != nil || s.Ready+s.Delayed+s.Leased > 0 {
		return false
	}
	seen, err := r.rdb.HLen(ctx, seenKey(r.spec)).Result()
	r.mu.Lock()
	defer r.mu.Unlock()
	return err == nil && seen >= int64(len(r.published))
}

// waitDrained polls until drained or the deadline; the report says what is missing.
func (r *rig) waitDrained(within time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for !r.drained(ctx) {
		select {
		case <-ctx.Done():
			r.t.Logf("%s: not drained within %s", r.name, within)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// report prints jobs, kills, lost, duplicated and redelivery time, and fails the test on any lost
// job.
func (r *rig) report(extra string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen, err := r.rdb.HGetAll(ctx, seenKey(r.spec)).Result()
	if err != nil {
		r.t.Fatalf("read seen: %v", err)
	}
	redelivered, err := r.rdb.HGetAll(ctx, redeliveredKey(r.spec)).Result()
	if err != nil {
		r.t.Fatalf("read redelivered: %v", err)
	}
	stats, err := r.client.Stats(ctx, r.spec.NS, r.spec.Queue)
	if err != nil {
		r.t.Fatalf("stats: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	lost, dups := 0, 0
	for id := range r.published {
		if seen[id] == "" {
			lost++
		}
	}
	for _, n := range seen {
		if c, _ := strconv.Atoi(n); c > 1 {
			dups += c - 1
		}
	}
	// Redelivery time: from the kill of the worker that had the job (or, when that worker was not
	// killed, the last kill of anything) to the redelivery.
	var waits []time.Duration
	for _, v := range redelivered {
		prev, ms, _ := strings.Cut(v, ":")
		n, _ := strconv.ParseInt(ms, 10, 64)
		at := time.UnixMilli(n)
		last, ok := r.killedPID[prev]
		for _, k := range r.kills {
			if !ok && !k.After(at) {
				last = k
			}
		}
		if !last.IsZero() {
			waits = append(waits, at.Sub(last))
		}
	}
	slices.Sort(waits)
	redelivery := "none"
	if len(waits) > 0 {
		redelivery = fmt.Sprintf("%d jobs, p50 %s, max %s", len(waits),
			waits[len(waits)/2].Round(time.Millisecond), waits[len(waits)-1].Round(time.Millisecond))
	}
	line := fmt.Sprintf("chaos %s: jobs %d, kills %d, lost %d, duplicated %d, dead %d, redelivery %s%s",
		r.name, len(r.published), len(r.kills), lost, dups, stats.Dead, redelivery, extra)
	fmt.Println(line)
	r.t.Log(line)
	if lost > 0 || stats.Dead > 0 {
		r.t.Errorf("%s: %d acknowledged jobs lost, %d dead", r.name, lost, stats.Dead)
	}
}

// envInt reads a positive integer knob.
// loadDuration is how long the kill tests run their load: SLUICE_CHAOS_SECONDS (75 s).
func loadDuration() time.Duration {
	return time.Duration(envInt("SLUICE_CHAOS_SECONDS", 75)) * time.Second
}

// publishers publishes from n goroutines, job ids prefix1, prefix2, ..., until the returned stop
// is called. A job that publish reports published is acknowledged (it must run); a failed publish
// is counted, and its goroutine pauses before the next (what it publishes to is down: a dead
// target refuses at once, so do not spin). stop waits for the goroutines and returns the counts.
func (r *rig) publishers(n int, prefix string, publish func(id string) bool) (stop func() (ok, failed int64)) {
	done := make(chan struct{})
	var (
		wg              sync.WaitGroup
		seq, oks, fails atomic.Int64
	)
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				id := prefix + strconv.FormatInt(seq.Add(1), 10)
				if publish(id) {
					r.acknowledged(id)
					oks.Add(1)
				} else {
					fails.Add(1)
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	return func() (int64, int64) {
		close(done)
		wg.Wait()
		return oks.Load(), fails.Load()
	}
}

// killFor kills something for d: it waits pause() (the chaos: time between kills), calls kill,
// which kills and returns how to bring it back, records the kill, brings it back, and so on.
// It returns the longest time from a kill until it was back.
func (r *rig) killFor(d time.Duration, pause func() time.Duration, kill func() (back func())) time.Duration {
	var worst time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(pause())
		back := kill()
		r.killed()
		killedAt := time.Now()
		back()
		worst = max(worst, time.Since(killedAt))
	}
	return worst
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// jitter is a random duration in [lo, hi).
func jitter(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rand.Int64N(int64(hi-lo)))
}
