package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/tenant"
)

// newHandlerBench builds a server on a fresh Redis, without listeners, for benchmarks that call
// its handlers directly, and returns it with a token of the namespace "bench".
func newHandlerBench(b *testing.B, cfg Config) (context.Context, *Server, string) {
	b.Helper()
	env := redistest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	cfg.RedisURL, cfg.Prefix = env.URL, env.Prefix
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	secret, _, err := srv.tokens.Create(ctx, tenant.CreateTokenParams{Namespace: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return ctx, srv, secret
}

// BenchmarkHandlerConsumeAck runs one job's consume and ack through the public handler directly
// (no sockets, no HTTP parsing), on the native routes and on the lmstfy-compatible ones, which do
// the same engine work. ns/op (mostly the Redis round trips) and allocs/op are per job (two
// requests). Its point is the CPU profile: with -cpuprofile, focusing on each API's handlers and
// ignoring queue.(*Client), it shows what the routes themselves cost per job, apart from the
// kernel's and the engine's share, which a side-by-side run over sockets cannot resolve.
func BenchmarkHandlerConsumeAck(b *testing.B) {
	ctx, srv, secret := newHandlerBench(b, Config{})
	h := srv.PublicHandler()
	payload := bytes.Repeat([]byte("x"), 98)
	fill := func(b *testing.B, q string, n int) {
		b.Helper()
		ps := make([]queue.PublishParams, 0, 500)
		for n > 0 {
			ps = ps[:0]
			for range min(n, 500) {
				ps = append(ps, queue.PublishParams{Namespace: "bench", Queue: q, Payload: []byte(`"` + string(payload) + `"`)})
			}
			if _, err := srv.queue.PublishMany(ctx, ps); err != nil {
				b.Fatal(err)
			}
			n -= len(ps)
		}
	}
	do := func(b *testing.B, req *http.Request, want int) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s %s: %d %s", req.Method, req.URL, rec.Code, rec.Body)
		}
		return rec
	}
	b.Run("native", func(b *testing.B) {
		fill(b, "native", b.N)
		consume := []byte(`{"queues":["native"],"count":1,"ttr":300,"timeout":0}`)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			req := httptest.NewRequest(http.MethodPost, "/v1/ns/bench/consume", bytes.NewReader(consume))
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("Content-Type", "application/json")
			var got struct {
				Jobs []struct {
					JobID    string `json:"job_id"`
					Delivery int    `json:"delivery"`
				} `json:"jobs"`
			}
			if err := json.Unmarshal(do(b, req, http.StatusOK).Body.Bytes(), &got); err != nil || len(got.Jobs) != 1 {
				b.Fatalf("consume: %v %+v", err, got)
			}
			req = httptest.NewRequest(http.MethodPost, "/v1/ns/bench/queues/native/jobs/"+got.Jobs[0].JobID+"/ack",
				bytes.NewReader([]byte(`{"delivery":`+strconv.Itoa(got.Jobs[0].Delivery)+`}`)))
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("Content-Type", "application/json")
			do(b, req, http.StatusNoContent)
		}
	})
	b.Run("lmstfy", func(b *testing.B) {
		fill(b, "lmstfy", b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			req := httptest.NewRequest(http.MethodGet, "/api/bench/lmstfy?timeout=0&ttr=300&count=1", nil)
			req.Header.Set("X-Token", secret)
			var got struct {
				JobID string `json:"job_id"`
			}
			if err := json.Unmarshal(do(b, req, http.StatusOK).Body.Bytes(), &got); err != nil || got.JobID == "" {
				b.Fatalf("consume: %v %+v", err, got)
			}
			req = httptest.NewRequest(http.MethodDelete, "/api/bench/lmstfy/job/"+got.JobID, nil)
			req.Header.Set("X-Token", secret)
			do(b, req, http.StatusNoContent)
		}
	})
}
