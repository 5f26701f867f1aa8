package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/tenant"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// benchServer is a server on loopback for benchmarks, with a token of namespace "bench".
func benchServer(b *testing.B) (base, token string) {
	b.Helper()
	env := redistest.New(b)
	srv, base := startBenchServer(b, Config{RedisURL: env.URL, Prefix: env.Prefix})
	secret, _, err := srv.tokens.Create(context.Background(), tenant.CreateTokenParams{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return base, secret
}

// startBenchServer runs a server of cfg, logging nowhere, on loopback listeners until the
// benchmark ends, and returns it with its public base URL.
func startBenchServer(b *testing.B, cfg Config) (*Server, string) {
	b.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, cfg)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pub, adm) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		_ = srv.Close()
	})
	return srv, "http://" + pub.Addr().String()
}

// post sends a request and reports an unexpected answer with b.Error (safe in RunParallel).
func post(b *testing.B, c *http.Client, url, token string, body []byte, want int) []byte {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		b.Error(err)
		return nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.Errorf("POST %s: %d %s", url, resp.StatusCode, out)
	}
	return out
}

// BenchmarkHTTPPublish measures one job per request, requests in parallel.
func BenchmarkHTTPPublish(b *testing.B) {
	base, tok := benchServer(b)
	url := base + "/v1/ns/bench/queues/q/jobs"
	body := []byte(`{"payload": {"n": 1}}`)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		for pb.Next() {
			post(b, c, url, tok, body, http.StatusCreated)
		}
	})
}

// BenchmarkHTTPPublishBatch measures batches of 100 jobs; ns/op is per job.
func BenchmarkHTTPPublishBatch(b *testing.B) {
	base, tok := benchServer(b)
	url := base + "/v1/ns/bench/queues/q/jobs"
	batch := make([]map[string]any, 100)
	for i := range batch {
		batch[i] = map[string]any{"payload": map[string]int{"n": i}}
	}
	body, _ := json.Marshal(map[string]any{"jobs": batch})
	c := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 100 {
		post(b, c, url, tok, body, http.StatusCreated)
	}
}

// BenchmarkHTTPConsumeAck measures consume of one job and its ack (two requests per op).
func BenchmarkHTTPConsumeAck(b *testing.B) {
	base, tok := benchServer(b)
	c := &http.Client{}
	batch := make([]map[string]any, 1000)
	for i := range batch {
		batch[i] = map[string]any{"payload": i}
	}
	body, _ := json.Marshal(map[string]any{"jobs": batch})
	for n := 0; n < b.N; n += len(batch) {
		post(b, c, base+"/v1/ns/bench/queues/q/jobs", tok, body, http.StatusCreated)
	}
	consume := []byte(`{"queues": ["q"]}`)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var got struct {
			Jobs []jobs.DeliveryJSON `json:"jobs"`
		}
		if err := json.Unmarshal(post(b, c, base+"/v1/ns/bench/consume", tok, consume, http.StatusOK), &got); err != nil || len(got.Jobs) != 1 {
			b.Fatalf("consume: %v %+v", err, got)
		}
		post(b, c, base+"/v1/ns/bench/queues/q/jobs/"+got.Jobs[0].JobID+"/ack", tok, []byte(`{"delivery": 1}`), http.StatusNoContent)
	}
}
