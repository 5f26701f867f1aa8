package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/cpustat"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/server/tasks"
	"github.com/sluicehq/sluice/server/tenant"
)

// BenchmarkHTTPTasksEndToEnd measures offline tasks through the server, end to end: POST
// /v1/tasks from client goroutines → the server's dispatcher → an HTTP call to a local no-op
// target → the result stored, with limits that do not bind. The clock stops when the endpoint
// counts every task completed. Run with -benchtime 50000x (b.N is the number of tasks).
// "single" sends one task per request from 64 goroutines, "batch100" batches of 100 from 4.
func BenchmarkHTTPTasksEndToEnd(b *testing.B) {
	b.Run("single", func(b *testing.B) { benchTasks(b, 1, 64) })
	b.Run("batch100", func(b *testing.B) { benchTasks(b, 100, 4) })
}

func benchTasks(b *testing.B, batch, clients int) {
	var calls atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	defer target.Close()
	env := redistest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, Config{
		RedisURL: env.URL, Prefix: env.Prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		RelayWorkers: 256, RelayAllowPrivate: true,
		RelayEndpoints: map[string]tasks.EndpointBody{"bench": {TargetURL: target.URL, Concurrency: ptr(100_000), MaxQueued: ptr(10_000_000)}},
	})
	if err != nil {
		b.Fatal(err)
	}
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pub, adm) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		_ = srv.Close()
	}()
	tok, _, err := srv.tokens.Create(ctx, tenant.CreateTokenParams{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	url := "http://" + pub.Addr().String() + "/v1/tasks"
	body := []byte(`{"endpoint": "bench", "body": "x"}`)
	if batch > 1 {
		body = []byte(`{"tasks": [` + strings.TrimSuffix(strings.Repeat(string(body)+",", batch), ",") + `]}`)
	}

	b.ResetTimer()
	start := time.Now()
	cpu0, redis0 := cpustat.Self(), cpustat.MustRedis(b, env.Client)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for next.Add(int64(batch)) <= int64(b.N) {
				post(b, c, url, tok, body, http.StatusCreated)
			}
		})
	}
	wg.Wait()
	submitted := time.Since(start)
	n := b.N / batch * batch // whole batches
	testwait.Until(b, 5*time.Minute, fmt.Sprintf("%d tasks completed", n), func() bool {
		st, err := srv.relay.Stats(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		return st.Totals["completed"] >= int64(n)
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(n)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(n)/submitted.Seconds(), "submits/s")
	b.ReportMetric(float64((cpustat.Self()-cpu0).Microseconds())/float64(n), "process-cpu-µs/task")
	b.ReportMetric(float64((cpustat.MustRedis(b, env.Client)-redis0).Microseconds())/float64(n), "redis-cpu-µs/task")
	if got := calls.Load(); got != int64(n) {
		b.Fatalf("target got %d calls for %d tasks", got, n)
	}
}

func ptr[T any](v T) *T { return &v }
