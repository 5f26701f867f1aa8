package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/tenant"
)

// BenchmarkAdminAtScale times the admin listings and the dashboard's pages on a Redis holding
// SLUICE_BENCH_QUEUES queues (default 100,000) in namespace "big", one job each, and
// SLUICE_BENCH_TOKENS tokens (default 10,000): half in namespace "crowd", half one each in a
// namespace of their own. Each request reads a page, so its time does not grow with them.
func BenchmarkAdminAtScale(b *testing.B) {
	nQueues, nTokens := envInt("SLUICE_BENCH_QUEUES", 100_000), envInt("SLUICE_BENCH_TOKENS", 10_000)
	env := redistest.New(b)
	srv, _ := startBenchServer(b, Config{RedisURL: env.URL, Prefix: env.Prefix})
	ctx := context.Background()
	parallel(b, nQueues, func(i int) error {
		_, err := srv.queue.Publish(ctx, queue.PublishParams{Namespace: "big", Queue: "q" + strconv.Itoa(i), Payload: []byte("x")})
		return err
	})
	parallel(b, nTokens, func(i int) error {
		ns := "crowd"
		if i%2 == 1 {
			ns = "solo" + strconv.Itoa(i)
		}
		_, _, err := srv.tokens.Create(ctx, tenant.CreateTokenParams{Namespace: ns})
		return err
	})
	adm := httptest.NewServer(srv.AdminHandler())
	b.Cleanup(adm.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	for _, path := range []string{
		"/ui/", "/ui/api/overview", "/ui/ns/big", "/ui/api/ns/big", "/ui/tokens", "/ui/tokens?ns=crowd",
		"/v1/namespaces", "/v1/namespaces/crowd/tokens",
	} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				resp, err := c.Get(adm.URL + path)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d", path, resp.StatusCode)
				}
			}
		})
	}
}

// envInt is the environment variable name as a number, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// parallel runs do(0..n-1) on 16 goroutines and fails the benchmark at the first error.
func parallel(b *testing.B, n int, do func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				if err := do(i); err != nil {
					errs <- fmt.Errorf("item %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}
