package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/internal/version"
)

// TracingConfig is where the server sends its OpenTelemetry traces (docs/tracing.md). Tracing is
// on when an endpoint is set, here or in OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and OTEL_SDK_DISABLED is not true. The other standard OTEL_*
// variables (headers, timeouts, OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES...) apply as the
// official SDK reads them; a field set here wins over its variable.
type TracingConfig struct {
	// Endpoint is the OTLP collector: host:port, or a URL (http:// sends without TLS). Default
	// "": OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, else tracing off.
	Endpoint string `json:"endpoint"`
	// Protocol is "grpc" or "http/protobuf". Default OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL, else
	// "http/protobuf".
	Protocol string `json:"protocol"`
	// SampleRatio is the share of new traces sampled (0..1); a request that arrives with a
	// traceparent follows its caller's decision. Default 0: OTEL_TRACES_SAMPLER, else 1 (all).
	SampleRatio float64 `json:"sample_ratio"`
	// ServiceName is the service.name of the spans. Default OTEL_SERVICE_NAME, else "sluice".
	ServiceName string `json:"service_name"`
}

// enabled reports whether the server traces: an endpoint is configured and the SDK not disabled.
func (c TracingConfig) enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return c.Endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// protocol is the configured OTLP protocol, from the config or the environment.
func (c TracingConfig) protocol() string {
	for _, p := range []string{c.Protocol, os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")} {
		if p != "" {
			return p
		}
	}
	return "http/protobuf"
}

func (c TracingConfig) validate() error {
	switch c.protocol() {
	case "grpc", "http/protobuf":
	default:
		return fmt.Errorf("tracing.protocol %q is neither grpc nor http/protobuf", c.protocol())
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("tracing.sample_ratio %v is outside 0..1", c.SampleRatio)
	}
	return nil
}

// newTracerProvider returns the SDK TracerProvider of c, exporting in batches over OTLP, or nil
// when tracing is off.
func newTracerProvider(ctx context.Context, c TracingConfig) (*sdktrace.TracerProvider, error) {
	if !c.enabled() {
		return nil, nil
	}
	exp, err := newExporter(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("server: tracing: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.version", version.Version)}
	if c.ServiceName != "" {
		attrs = append(attrs, attribute.String("service.name", c.ServiceName))
	} else if os.Getenv("OTEL_SERVICE_NAME") == "" {
		attrs = append(attrs, attribute.String("service.name", "sluice"))
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithAttributes(attrs...))
	if err != nil {
		return nil, fmt.Errorf("server: tracing: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if c.SampleRatio > 0 {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))))
	} else if os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// newExporter returns the OTLP exporter of c's protocol; the official exporters read the OTEL_*
// variables, and the endpoint set here overrides them.
func newExporter(ctx context.Context, c TracingConfig) (sdktrace.SpanExporter, error) {
	endpoint, insecure := c.Endpoint, false
	if rest, ok := strings.CutPrefix(endpoint, "http://"); ok {
		endpoint, insecure = rest, true
	} else if rest, ok := strings.CutPrefix(endpoint, "https://"); ok {
		endpoint = rest
	}
	endpoint = strings.TrimSuffix(endpoint, "/")
	if c.protocol() == "grpc" {
		return otlptracegrpc.New(ctx, exporterOptions(endpoint, insecure, otlptracegrpc.WithEndpoint, otlptracegrpc.WithInsecure)...)
	}
	return otlptracehttp.New(ctx, exporterOptions(endpoint, insecure, otlptracehttp.WithEndpoint, otlptracehttp.WithInsecure)...)
}

// exporterOptions are the options of an OTLP exporter (either protocol's) for endpoint ("": the
// environment's) and insecure.
func exporterOptions[O any](endpoint string, insecure bool, withEndpoint func(string) O, withInsecure func() O) []O {
	var opts []O
	if endpoint != "" {
		opts = append(opts, withEndpoint(endpoint))
	}
	if insecure {
		opts = append(opts, withInsecure())
	}
	return opts
}

// tracerProvider is the server's TracerProvider for its libraries' configs: nil (tracing off)
// when it has none, so that they skip every tracing step.
func (s *Server) tracerProvider() trace.TracerProvider {
	if s.tracer == nil {
		return nil
	}
	return s.tracer
}

// traced wraps the public handler: a request's traceparent header (W3C Trace Context) becomes the
// parent of a SERVER span, which is the parent of what the request does (a publish's PRODUCER
// span, a submitted task's). With tracing off it returns next unwrapped.
func (s *Server) traced(next http.Handler) http.Handler {
	if s.tracer == nil {
		return next
	}
	t := tracing.New(s.tracer, false)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, r, ts, end := startServerSpan(t, w, r)
		next.ServeHTTP(w, r)
		end(ts.status)
	})
}

// startServerSpan starts r's SERVER span (its traceparent header is the parent) and returns the
// writer and request to serve r with, the writer that records the answer's status, and the
// function that ends the span with that status.
func startServerSpan(t *tracing.Tracer, w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, *tracedStatus, func(int)) {
	ctx := tracing.FromHeader(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := t.Start(ctx, r.Method, trace.SpanKindServer,
		attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path))
	ts := &tracedStatus{ResponseWriter: w, status: http.StatusOK}
	return ts, r.WithContext(ctx), ts, func(status int) {
		tracing.End(span, nil, attribute.Int("http.response.status_code", status))
	}
}

// tracedStatus records the status a handler writes, for the SERVER span.
type tracedStatus struct {
	http.ResponseWriter
	status int
}

func (w *tracedStatus) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the writer beneath.
func (w *tracedStatus) Unwrap() http.ResponseWriter { return w.ResponseWriter }
