package queue_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// What tracing costs per job in the process: off (no TracerProvider) against on (the SDK sampling
// every trace into a batcher whose exporter drops the spans, so no collector is measured).
// Figures in docs/benchmarks.md.

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// eachTracingMode runs bench under "off" and "on". On, ctx is inside a request's span, so the
// jobs published carry a trace context and every delivery makes a span.
func eachTracingMode(b *testing.B, bench func(b *testing.B, ctx context.Context, c *queue.Client, env *redistest.Env)) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			var tp trace.TracerProvider
			ctx := context.Background()
			if mode == "on" {
				sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardExporter{}))
				b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
				var span trace.Span
				ctx, span = sdk.Tracer("bench").Start(ctx, "request")
				b.Cleanup(func() { span.End() })
				tp = sdk
			}
			env := redistest.New(b)
			c, err := queue.NewClient(env.Client, queue.Config{Prefix: env.Prefix, TracerProvider: tp})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			bench(b, ctx, c, env)
		})
	}
}

// BenchmarkTracingPublish is BenchmarkCostPublish with tracing off and on.
func BenchmarkTracingPublish(b *testing.B) {
	eachTracingMode(b, benchPublishOne)
}

// BenchmarkTracingWorker is BenchmarkCostWorker with tracing off and on.
func BenchmarkTracingWorker(b *testing.B) {
	eachTracingMode(b, benchWorker)
}

// BenchmarkTracingRetry is BenchmarkCostRetry with tracing off and on: on, each nack keeps the
// failed attempt's span and the retry's span links to it.
func BenchmarkTracingRetry(b *testing.B) {
	eachTracingMode(b, benchRetry)
}
