// Package jaegertest runs a real Jaeger all-in-one for tests (OTLP over HTTP in, its HTTP query
// API out, traces in memory) and reads traces back from it, so tracing is tested in the backend
// users look at, not against a recording exporter.
package jaegertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/testkit/testproc"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// Jaeger is a running Jaeger all-in-one.
type Jaeger struct {
	// OTLP is the host:port of its OTLP/HTTP receiver (traces at /v1/traces).
	OTLP string
	// Query is the base URL of its HTTP query API (and UI).
	Query string

	proc *testproc.Process
}

// client reads the query API; Stop closes its connections.
var client = &http.Client{Transport: &http.Transport{}}

// Stop kills the Jaeger of this test binary, if one was started. Pass it to redistest.Main, so
// that the leak check after the tests finds none of its goroutines.
func Stop() {
	if shared != nil {
		shared.proc.Kill()
	}
	client.CloseIdleConnections()
}

var (
	once    sync.Once
	shared  *Jaeger
	failure error
)

// Start returns the Jaeger of this test binary, starting it (and building it, the first time on
// a machine) on first use. It is killed with the test binary. A Jaeger that cannot be built or
// started fails tb.
func Start(tb testing.TB) *Jaeger {
	tb.Helper()
	once.Do(func() { shared, failure = start() })
	if failure != nil {
		tb.Fatal(failure)
	}
	return shared
}

// config is the all-in-one's configuration: memory storage, OTLP/HTTP in, query out, and no other
// listener (its defaults listen on fixed ports that concurrent test binaries would share).
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

func start() (*Jaeger, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("jaegertest-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "jaeger.log")
	var otlp string
	srv := testproc.Server{
		Log:          logPath,
		ReadyTimeout: 60 * time.Second,
		Command: func(port int) *exec.Cmd {
			grpcPort, otlpPort := freePort(), freePort()
			otlp = net.JoinHostPort("127.0.0.1", strconv.Itoa(otlpPort))
			cfg := filepath.Join(dir, "config.yaml")
			_ = os.WriteFile(cfg, fmt.Appendf(nil, config, port, grpcPort, otlpPort), 0o600)
			cmd := exec.Command(bin, "--config", "file:"+cfg)
			if f, err := os.Create(logPath); err == nil {
				cmd.Stdout, cmd.Stderr = f, f
			}
			return cmd
		},
		Ready: func(addr string) error {
			if _, err := get("http://"+addr+"/api/services", nil); err != nil {
				return err
			}
			c, err := net.DialTimeout("tcp", otlp, time.Second)
			if err != nil {
				return err
			}
			return c.Close()
		},
	}
	p, err := srv.Start()
	if err != nil {
		return nil, err
	}
	return &Jaeger{OTLP: otlp, Query: "http://" + p.Addr(), proc: p}, nil
}

// freePort returns a loopback port no one listens on at the moment (0 when none is found, which
// makes the start fail and be tried again).
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TracerProvider returns an SDK TracerProvider of service that samples everything and exports
// each span to j as it ends; it is shut down when tb ends.
func (j *Jaeger) TracerProvider(tb testing.TB, service string) trace.TracerProvider {
	tb.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpoint(j.OTLP), otlptracehttp.WithInsecure())
	if err != nil {
		tb.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
	)
	tb.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// Span is a span as Jaeger's query API returns it.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"` // CHILD_OF or FOLLOWS_FROM (an OpenTelemetry link)
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Fields []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
	ProcessID string `json:"processID"`
	Service   string `json:"-"` // filled from the trace's processes
}

// Tag returns the value of the span's tag key as text ("" when absent).
func (s Span) Tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// Parent returns the span id of the span's parent in its trace ("" for a root).
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

// FollowsFrom lists the spans s links to (OpenTelemetry links), as "trace/span".
func (s Span) FollowsFrom() []string {
	var out []string
	for _, r := range s.References {
		if r.RefType == "FOLLOWS_FROM" {
			out = append(out, r.TraceID+"/"+r.SpanID)
		}
	}
	return out
}

// Events returns the names of the span's events (Jaeger's logs with an "event" field).
func (s Span) Events() []string {
	var out []string
	for _, l := range s.Logs {
		for _, f := range l.Fields {
			if f.Key == "event" {
				out = append(out, fmt.Sprint(f.Value))
			}
		}
	}
	return out
}

// Event returns the fields of the span's first event named name, as text, and whether it has one.
func (s Span) Event(name string) (map[string]string, bool) {
	for _, l := range s.Logs {
		fields := make(map[string]string, len(l.Fields))
		for _, f := range l.Fields {
			fields[f.Key] = fmt.Sprint(f.Value)
		}
		if fields["event"] == name {
			return fields, true
		}
	}
	return nil, false
}

// Trace returns the spans of trace id (hex), or none when Jaeger does not have it.
func (j *Jaeger) Trace(tb testing.TB, id string) []Span {
	tb.Helper()
	var body struct {
		Data []struct {
			Spans     []Span `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	found, err := get(j.Query+"/api/traces/"+id, &body)
	if err != nil {
		tb.Fatal(err)
	}
	if !found {
		return nil
	}
	var out []Span
	for _, tr := range body.Data {
		for _, s := range tr.Spans {
			s.Service = tr.Processes[s.ProcessID].ServiceName
			out = append(out, s)
		}
	}
	return out
}

// WaitTrace waits until trace id holds a span for which each of want returns true, one span per
// condition, and returns the trace's spans.
func (j *Jaeger) WaitTrace(tb testing.TB, id string, what string, want func(spans []Span) bool) []Span {
	tb.Helper()
	var spans []Span
	testwait.Until(tb, 30*time.Second, what, func() bool {
		spans = j.Trace(tb, id)
		return want(spans)
	})
	return spans
}

// Services returns the services Jaeger holds spans of.
func (j *Jaeger) Services(tb testing.TB) []string {
	tb.Helper()
	var body struct {
		Data []string `json:"data"`
	}
	if _, err := get(j.Query+"/api/services", &body); err != nil {
		tb.Fatal(err)
	}
	return body.Data
}

// Find returns the first span of spans named name, and whether there is one.
func Find(spans []Span, name string) (Span, bool) {
	for _, s := range spans {
		if s.OperationName == name {
			return s, true
		}
	}
	return Span{}, false
}

// All returns the spans of spans named name.
func All(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.OperationName == name {
			out = append(out, s)
		}
	}
	return out
}

// get GETs url and decodes its JSON answer into into (nil: drops it); found is false on a 404.
func get(url string, into any) (found bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return false, err
	case resp.StatusCode == http.StatusNotFound:
		return false, nil
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("jaegertest: GET %s: %s: %s", url, resp.Status, body)
	case into == nil:
		return true, nil
	}
	return true, json.Unmarshal(body, into)
}
