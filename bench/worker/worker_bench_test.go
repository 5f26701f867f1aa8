// Package worker benchmarks Sluice's worker SDK (queue.Queue[T]) side by side with asynq on one
// redis-server: enqueue, processing throughput, idle pickup latency, delayed-job lateness and the
// time until a crashed worker's job runs again.
//
//	cd bench && go test -run '^$' -bench . -benchtime 1x ./worker/
//
// SLUICE_BENCH_JOBS sets the job count of the enqueue and processing runs (default 20,000; the
// recorded figures use 100,000). SLUICE_BENCH_FULL=1 also runs asynq's crash recovery, which takes
// about a minute and a half.
package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

const concurrency = 50

type payload struct {
	N     int   `json:"n"`
	At    int64 `json:"at"`              // unix ns the job was meant to run (pickup and delay runs)
	Delay int64 `json:"delay,omitempty"` // ns the job was delayed by (delay runs)
}

func jobCount() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_BENCH_JOBS")); err == nil && n > 0 {
		return n
	}
	return 20_000
}

func full() bool { return os.Getenv("SLUICE_BENCH_FULL") == "1" }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// --- setup ---

type sluiceEnv struct {
	client *queue.Client
	q      *queue.Queue[payload]
	env    *redistest.Env
}

func newSluice(b *testing.B, name string) *sluiceEnv {
	b.Helper()
	env := redistest.New(b)
	c, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	q, err := queue.NewQueue[payload](c, "bench", name, queue.QueueConfig{})
	if err != nil {
		b.Fatal(err)
	}
	return &sluiceEnv{client: c, q: q, env: env}
}

// asynqEnv is asynq on DB 1 of the same server, emptied first.
type asynqEnv struct {
	rdb    *redis.Client
	client *asynq.Client
	opt    asynq.RedisClientOpt
}

func newAsynq(b *testing.B) *asynqEnv {
	b.Helper()
	env := redistest.New(b)
	addr := strings.TrimPrefix(env.URL, "redis://")
	opt := asynq.RedisClientOpt{Addr: addr, DB: 1, PoolSize: 2 * concurrency}
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: 1})
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	c := asynq.NewClient(opt)
	b.Cleanup(func() {
		_ = c.Close()
		_ = rdb.FlushDB(context.Background()).Err()
		_ = rdb.Close()
	})
	return &asynqEnv{rdb: rdb, client: c, opt: opt}
}

func (a *asynqEnv) server(b *testing.B, extra func(*asynq.Config)) *asynq.Server {
	b.Helper()
	cfg := asynq.Config{Concurrency: concurrency, LogLevel: asynq.FatalLevel}
	if extra != nil {
		extra(&cfg)
	}
	return asynq.NewServer(a.opt, cfg)
}

func runSluice(b *testing.B, q *queue.Queue[payload], cfg queue.ConsumeConfig, h func(context.Context, *payload) error) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Consume(ctx, h, cfg) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				b.Errorf("Consume: %v", err)
			}
		})
	}
	b.Cleanup(stop)
	return stop
}

func startAsynq(b *testing.B, srv *asynq.Server, h func(context.Context, *asynq.Task) error) (stop func()) {
	b.Helper()
	if err := srv.Start(asynq.HandlerFunc(h)); err != nil {
		b.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(srv.Shutdown) }
	b.Cleanup(stop)
	return stop
}

func report(b *testing.B, n int, d time.Duration) {
	b.ReportMetric(float64(n)/d.Seconds(), "jobs/s")
	b.ReportMetric(0, "ns/op")
}

func reportLatency(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	q := func(p float64) float64 {
		i := min(int(p*float64(len(samples))), len(samples)-1)
		return float64(samples[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(0, "ns/op")
}

// --- enqueue ---

func BenchmarkEnqueue(b *testing.B) {
	n := jobCount()
	p := &payload{N: 1}
	// The single-goroutine runs also report CPU per job, of this process and of redis-server
	// (INFO cpu), which a busy machine distorts far less than jobs/s.
	b.Run("sluice/single", func(b *testing.B) {
		s := newSluice(b, "enqueue")
		ctx := context.Background()
		for b.Loop() {
			measureSingle(b, s.env.Client, n, func() error { _, err := s.q.Produce(ctx, p, 0); return err })
		}
	})
	// The floor of one call: EVALSHA of a script that only returns, one call at a time on the same
	// client (one round trip and nothing else).
	b.Run("evalsha-floor/single", func(b *testing.B) {
		s := newSluice(b, "enqueue")
		ctx := context.Background()
		script := redis.NewScript("return 1")
		if err := script.Load(ctx, s.env.Client).Err(); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			measureSingle(b, s.env.Client, n, func() error { return script.EvalSha(ctx, s.env.Client, nil).Err() })
		}
	})
	b.Run("asynq/single", func(b *testing.B) {
		a := newAsynq(b)
		data := []byte(`{"n":1}`)
		for b.Loop() {
			measureSingle(b, a.rdb, n, func() error { _, err := a.client.Enqueue(asynq.NewTask("t", data)); return err })
		}
	})
	b.Run("sluice/parallel-50", func(b *testing.B) {
		s := newSluice(b, "enqueue")
		for b.Loop() {
			report(b, n, parallel(n, func() error { _, err := s.q.Produce(context.Background(), p, 0); return err }))
		}
	})
	b.Run("asynq/parallel-50", func(b *testing.B) {
		a := newAsynq(b)
		data := []byte(`{"n":1}`)
		for b.Loop() {
			report(b, n, parallel(n, func() error { _, err := a.client.Enqueue(asynq.NewTask("t", data)); return err }))
		}
	})
	b.Run("sluice/batch-1000", func(b *testing.B) {
		s := newSluice(b, "enqueue")
		batch := make([]*payload, 1000)
		for i := range batch {
			batch[i] = p
		}
		for b.Loop() {
			start := time.Now()
			for done := 0; done < n; done += len(batch) {
				if _, err := s.q.ProduceMany(context.Background(), batch[:min(len(batch), n-done)], 0); err != nil {
					b.Fatal(err)
				}
			}
			report(b, n, time.Since(start))
		}
	})
	b.Run("sluice/batch-1000-parallel-4", func(b *testing.B) {
		s := newSluice(b, "enqueue")
		batch := make([]*payload, 1000)
		for i := range batch {
			batch[i] = p
		}
		for b.Loop() {
			var next atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range 4 {
				wg.Go(func() {
					for done := int(next.Add(int64(len(batch)))) - len(batch); done < n; done = int(next.Add(int64(len(batch)))) - len(batch) {
						if _, err := s.q.ProduceMany(context.Background(), batch[:min(len(batch), n-done)], 0); err != nil {
							panic(err)
						}
					}
				})
			}
			wg.Wait()
			report(b, n, time.Since(start))
		}
	})
}

// measureSingle makes n calls of f one after another and reports jobs/s, this process's CPU time
// per job and redis-server's (INFO cpu, user + sys of the server rdb talks to).
func measureSingle(b *testing.B, rdb redis.UniversalClient, n int, f func() error) {
	b.Helper()
	redisBefore := cpustat.MustRedis(b, rdb)
	cpuBefore := cpustat.Self()
	start := time.Now()
	for range n {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	cpu := cpustat.Self() - cpuBefore
	redisUsed := cpustat.MustRedis(b, rdb) - redisBefore
	report(b, n, elapsed)
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "go-cpu-µs/job")
	b.ReportMetric(float64(redisUsed.Microseconds())/float64(n), "redis-cpu-µs/job")
}

// parallel runs n calls of f on 50 goroutines and returns the time it took.
func parallel(n int, f func() error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := f(); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// --- processing ---

func BenchmarkProcess(b *testing.B) {
	n := jobCount()
	b.Run("sluice", func(b *testing.B) {
		for b.Loop() {
			s := newSluice(b, "process")
			preloadSluice(b, s, n)
			var count atomic.Int64
			all := make(chan struct{})
			start := time.Now()
			stop := runSluice(b, s.q, queue.ConsumeConfig{Concurrency: concurrency, Prefetch: concurrency},
				func(context.Context, *payload) error {
					if count.Add(1) == int64(n) {
						close(all)
					}
					return nil
				})
			<-all
			report(b, n, time.Since(start))
			stop()
		}
	})
	b.Run("asynq", func(b *testing.B) {
		for b.Loop() {
			a := newAsynq(b)
			data := []byte(`{"n":1}`)
			parallel(n, func() error { _, err := a.client.Enqueue(asynq.NewTask("t", data)); return err })
			var count atomic.Int64
			all := make(chan struct{})
			start := time.Now()
			stop := startAsynq(b, a.server(b, nil), func(context.Context, *asynq.Task) error {
				if count.Add(1) == int64(n) {
					close(all)
				}
				return nil
			})
			<-all
			report(b, n, time.Since(start))
			stop()
		}
	})
}

func preloadSluice(b *testing.B, s *sluiceEnv, n int) {
	b.Helper()
	batch := make([]*payload, 1000)
	for i := range batch {
		batch[i] = &payload{N: i}
	}
	for done := 0; done < n; done += len(batch) {
		if _, err := s.q.ProduceMany(context.Background(), batch[:min(len(batch), n-done)], 0); err != nil {
			b.Fatal(err)
		}
	}
}

// --- idle pickup ---

func pickupSamples(peer string) int {
	if full() || peer == "sluice" {
		return 200
	}
	return 40 // asynq polls an empty queue once a second: 40 samples take about 20s
}

func BenchmarkPickup(b *testing.B) {
	b.Run("sluice", func(b *testing.B) {
		for b.Loop() {
			s := newSluice(b, "pickup")
			got := make(chan time.Duration, 1)
			runSluice(b, s.q, queue.ConsumeConfig{Concurrency: concurrency}, func(_ context.Context, p *payload) error {
				got <- time.Since(time.Unix(0, p.At))
				return nil
			})
			samples := measurePickup(b, pickupSamples("sluice"), got, func(p *payload) error {
				_, err := s.q.Produce(context.Background(), p, 0)
				return err
			})
			reportLatency(b, samples)
		}
	})
	b.Run("asynq", func(b *testing.B) {
		for b.Loop() {
			a := newAsynq(b)
			got := make(chan time.Duration, 1)
			startAsynq(b, a.server(b, nil), func(_ context.Context, t *asynq.Task) error {
				at, _ := strconv.ParseInt(string(t.Payload()), 10, 64)
				got <- time.Since(time.Unix(0, at))
				return nil
			})
			samples := measurePickup(b, pickupSamples("asynq"), got, func(p *payload) error {
				_, err := a.client.Enqueue(asynq.NewTask("t", []byte(strconv.FormatInt(p.At, 10))))
				return err
			})
			reportLatency(b, samples)
		}
	})
}

// measurePickup enqueues one job at a time into an idle worker, at a random phase, and collects
// the time from enqueue to handler start.
func measurePickup(b *testing.B, n int, got chan time.Duration, enqueue func(*payload) error) []time.Duration {
	b.Helper()
	samples := make([]time.Duration, 0, n)
	for i := range n {
		time.Sleep(time.Duration(i%7) * 3 * time.Millisecond) // let the worker go idle, at varied phases
		if err := enqueue(&payload{N: i, At: time.Now().UnixNano()}); err != nil {
			b.Fatal(err)
		}
		select {
		case d := <-got:
			samples = append(samples, d)
		case <-time.After(30 * time.Second):
			b.Fatal("job not picked up within 30s")
		}
	}
	return samples
}

// --- delayed jobs ---

const delayedJobs = 500

// delayStart is one delayed job's start. late is how late it started by this machine's clock,
// from the due time the producer computed before enqueuing (negative: early). redisEarly is, for
// Sluice, how long before its due time the job was leased by Redis's clock: the delay asked for
// against the delivery's Elapsed (publish to lease, both read from Redis TIME by the scripts), as
// the engine's own BenchmarkDelayLateness judges; 0 when on time or late.
type delayStart struct {
	late, redisEarly time.Duration
}

// BenchmarkDelay enqueues jobs due 200 ms..3 s later and reports how late each started: p50, p99
// and max of the signed lateness by the local clock (an early start is negative, not clamped to
// 0), and the early starts, counted and the worst one, by the local clock (early-local,
// worst-early-local-ms) and for Sluice by Redis's clock (early-redis, worst-early-redis-ms), which
// the engine's guarantee is about: a job never starts before it is due.
func BenchmarkDelay(b *testing.B) {
	b.Run("sluice", func(b *testing.B) {
		for b.Loop() {
			s := newSluice(b, "delay")
			got := make(chan delayStart, delayedJobs)
			runSluice(b, s.q, queue.ConsumeConfig{Concurrency: concurrency}, func(ctx context.Context, p *payload) error {
				late := time.Since(time.Unix(0, p.At))
				d, ok := queue.DeliveryFromContext(ctx)
				if !ok {
					return errors.New("no delivery in the handler's context")
				}
				got <- delayStart{late: late, redisEarly: max(time.Duration(p.Delay)-d.Elapsed, 0)}
				return nil
			})
			reportDelay(b, measureDelay(b, got, func(p *payload, d time.Duration) error {
				_, err := s.q.Produce(context.Background(), p, d)
				return err
			}), true)
		}
	})
	b.Run("asynq", func(b *testing.B) {
		for b.Loop() {
			a := newAsynq(b)
			got := make(chan delayStart, delayedJobs)
			startAsynq(b, a.server(b, nil), func(_ context.Context, t *asynq.Task) error {
				at, _ := strconv.ParseInt(string(t.Payload()), 10, 64)
				got <- delayStart{late: time.Since(time.Unix(0, at))}
				return nil
			})
			reportDelay(b, measureDelay(b, got, func(p *payload, d time.Duration) error {
				_, err := a.client.Enqueue(asynq.NewTask("t", []byte(strconv.FormatInt(p.At, 10))), asynq.ProcessIn(d))
				return err
			}), false)
		}
	})
}

// measureDelay enqueues jobs due 200ms..3s from now (in steps of 5.6 ms, so most delays are not
// whole milliseconds) and collects how each one started.
func measureDelay(b *testing.B, got chan delayStart, enqueue func(*payload, time.Duration) error) []delayStart {
	b.Helper()
	for i := range delayedJobs {
		d := 200*time.Millisecond + time.Duration(i)*(2800*time.Millisecond/delayedJobs)
		if err := enqueue(&payload{N: i, At: time.Now().Add(d).UnixNano(), Delay: int64(d)}, d); err != nil {
			b.Fatal(err)
		}
	}
	samples := make([]delayStart, 0, delayedJobs)
	timeout := time.After(60 * time.Second)
	for len(samples) < delayedJobs {
		select {
		case d := <-got:
			samples = append(samples, d)
		case <-timeout:
			b.Fatalf("only %d of %d delayed jobs ran within 60s", len(samples), delayedJobs)
		}
	}
	return samples
}

// reportDelay reports the signed lateness percentiles and the early starts (byRedis: the samples
// carry Redis's judgement too).
func reportDelay(b *testing.B, starts []delayStart, byRedis bool) {
	b.Helper()
	late := make([]time.Duration, len(starts))
	var earlyLocal, earlyRedis int
	var worstLocal, worstRedis time.Duration
	for i, s := range starts {
		late[i] = s.late
		if s.late < 0 {
			earlyLocal++
			worstLocal = max(worstLocal, -s.late)
		}
		if s.redisEarly > 0 {
			earlyRedis++
			worstRedis = max(worstRedis, s.redisEarly)
		}
	}
	reportLatency(b, late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(float64(earlyLocal), "early-local")
	b.ReportMetric(ms(worstLocal), "worst-early-local-ms")
	if byRedis {
		b.ReportMetric(float64(earlyRedis), "early-redis")
		b.ReportMetric(ms(worstRedis), "worst-early-redis-ms")
	}
}

// --- crash re-delivery ---

// childEnv selects the crashing consumer a re-executed bench binary runs instead of benchmarks.
const childEnv = "SLUICE_BENCH_CRASH_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "sluice":
		crashChildSluice()
	case "asynq":
		crashChildAsynq()
	default:
		redistest.Main(m)
	}
}

const crashLease = time.Second

func crashChildSluice() {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("CHILD_ADDR")})
	c, err := queue.NewClient(rdb, queue.Config{Prefix: os.Getenv("CHILD_PREFIX"), Logger: quiet})
	if err != nil {
		panic(err)
	}
	q, err := queue.NewQueue[payload](c, "bench", "crash", queue.QueueConfig{})
	if err != nil {
		panic(err)
	}
	_ = q.Consume(context.Background(), func(context.Context, *payload) error {
		fmt.Println("started")
		select {} // hold the job until killed
	}, queue.ConsumeConfig{Concurrency: 1, TTR: crashLease})
}

func crashChildAsynq() {
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: os.Getenv("CHILD_ADDR"), DB: 1},
		asynq.Config{Concurrency: 1, LogLevel: asynq.FatalLevel})
	_ = srv.Run(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		fmt.Println("started")
		select {}
	}))
}

// crash starts a child consumer, waits until its handler holds the job, kills it with SIGKILL and
// returns the kill time.
func crash(b *testing.B, peer string, env *redistest.Env) time.Time {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+peer, "CHILD_ADDR="+strings.TrimPrefix(env.URL, "redis://"),
		"CHILD_PREFIX="+env.Prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "started\n" {
		_ = cmd.Process.Kill()
		b.Fatalf("child said %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.Fatal(err)
	}
	killed := time.Now()
	_ = cmd.Wait()
	return killed
}

func BenchmarkCrashRedelivery(b *testing.B) {
	b.Run("sluice", func(b *testing.B) {
		for b.Loop() {
			s := newSluice(b, "crash")
			if _, err := s.q.Produce(context.Background(), &payload{}, 0); err != nil {
				b.Fatal(err)
			}
			killed := crash(b, "sluice", s.env)
			got := make(chan time.Time, 1)
			runSluice(b, s.q, queue.ConsumeConfig{Concurrency: 1, TTR: crashLease}, func(context.Context, *payload) error {
				got <- time.Now()
				return nil
			})
			select {
			case at := <-got:
				b.ReportMetric(float64(at.Sub(killed))/float64(time.Millisecond), "redelivery-ms")
				b.ReportMetric(float64(crashLease)/float64(time.Millisecond), "lease-ms")
				b.ReportMetric(0, "ns/op")
			case <-time.After(30 * time.Second):
				b.Fatal("job not run again within 30s")
			}
		}
	})
	b.Run("asynq", func(b *testing.B) {
		if !full() {
			b.Skip("asynq recovers a crashed worker's task after about 90s; set SLUICE_BENCH_FULL=1 to measure it")
		}
		for b.Loop() {
			a := newAsynq(b)
			if _, err := a.client.Enqueue(asynq.NewTask("t", []byte("x"))); err != nil {
				b.Fatal(err)
			}
			killed := crash(b, "asynq", redistest.New(b))
			got := make(chan time.Time, 1)
			startAsynq(b, a.server(b, nil), func(context.Context, *asynq.Task) error {
				select {
				case got <- time.Now():
				default:
				}
				return nil
			})
			select {
			case at := <-got:
				b.ReportMetric(float64(at.Sub(killed))/float64(time.Millisecond), "redelivery-ms")
				b.ReportMetric(0, "ns/op")
			case <-time.After(5 * time.Minute):
				b.Fatal("task not run again within 5 minutes")
			}
		}
	})
}
