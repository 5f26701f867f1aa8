package queue_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// The before/after pair of what a change to the publish and worker paths costs (tracing's, in
// docs/benchmarks.md): they use only API older than tracing, so the same file builds at the
// commit before it. Besides jobs/s they report the CPU per job of this process and of Redis,
// which hold up on a loaded machine where jobs/s does not.

// BenchmarkCostPublish is one Publish at a time from one goroutine.
func BenchmarkCostPublish(b *testing.B) {
	c, env := benchClient(b)
	benchPublishOne(b, context.Background(), c, env)
}

// BenchmarkCostWorker is a Queue[T] worker consuming and acking jobs published beforehand.
func BenchmarkCostWorker(b *testing.B) {
	c, env := benchClient(b)
	benchWorker(b, context.Background(), c, env)
}

// quiet drops the workers' logs.
var quiet = slog.New(slog.DiscardHandler)

// errFirstTry fails a job's first deliveries in benchRetry.
var errFirstTry = errors.New("the first try fails")

// BenchmarkCostRetry is BenchmarkCostWorker with every job failing its first delivery (retried at
// once) and acked on its second: a nack, a consume and an ack per job.
func BenchmarkCostRetry(b *testing.B) {
	c, env := benchClient(b)
	benchRetry(b, context.Background(), c, env)
}

// cpuPerJob reports the CPU this process and Redis used per job since the returned func's
// measurement started; call it once the timed work is done.
func cpuPerJob(b *testing.B, env *redistest.Env) (report func(jobs int)) {
	self0, redis0 := cpustat.Self(), cpustat.MustRedis(b, env.Client)
	return func(jobs int) {
		self, redis := cpustat.Self()-self0, cpustat.MustRedis(b, env.Client)-redis0
		b.ReportMetric(float64(self.Nanoseconds())/float64(jobs)/1e3, "client-cpu-µs/job")
		b.ReportMetric(float64(redis.Nanoseconds())/float64(jobs)/1e3, "redis-cpu-µs/job")
		b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
	}
}

// benchPublishOne publishes one job per call on ctx, b.N times.
func benchPublishOne(b *testing.B, ctx context.Context, c *queue.Client, env *redistest.Env) {
	b.ReportAllocs()
	report := cpuPerJob(b, env)
	for b.Loop() {
		if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "bench", Queue: "q", Payload: payload100}); err != nil {
			b.Fatal(err)
		}
	}
	report(b.N)
}

// benchWorker publishes b.N jobs on ctx (ProduceMany, 500 a call), then times one worker of
// concurrency 16 until it has processed them all.
func benchWorker(b *testing.B, ctx context.Context, c *queue.Client, env *redistest.Env) {
	benchWorkerFailing(b, ctx, c, env, 0)
}

// benchRetry is benchWorker with each job failing its first delivery, retried at once.
func benchRetry(b *testing.B, ctx context.Context, c *queue.Client, env *redistest.Env) {
	benchWorkerFailing(b, ctx, c, env, 1)
}

// benchWorkerFailing is benchWorker with each job failing its first fails deliveries (retried at
// once): it times until every job has been acked.
func benchWorkerFailing(b *testing.B, ctx context.Context, c *queue.Client, env *redistest.Env, fails int) {
	q, err := queue.NewQueue[task](c, "bench", "q", queue.QueueConfig{})
	if err != nil {
		b.Fatal(err)
	}
	jobs := make([]*task, 500)
	for i := range jobs {
		jobs[i] = &task{N: i}
	}
	for left := b.N; left > 0; left -= len(jobs) {
		if _, err := q.ProduceMany(ctx, jobs[:min(left, len(jobs))], 0); err != nil {
			b.Fatal(err)
		}
	}
	var done atomic.Int64
	all := make(chan struct{})
	runCtx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	report := cpuPerJob(b, env)
	go func() {
		defer close(stopped)
		_ = q.Consume(runCtx, func(ctx context.Context, _ *task) error {
			if d, _ := queue.DeliveryFromContext(ctx); d.Delivery <= fails {
				return queue.RetryAfter(0, errFirstTry)
			}
			if done.Add(1) == int64(b.N) {
				close(all)
			}
			return nil
		}, queue.ConsumeConfig{Concurrency: 16, Logger: quiet}) // a retry logs a warning
	}()
	<-all
	b.StopTimer()
	cancel()
	<-stopped // the last acks are sent before the client closes
	report(b.N)
}
