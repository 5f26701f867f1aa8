package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/tenant"
)

// BenchmarkNamespaceDeleteAtScale times the deletion of a namespace holding SLUICE_BENCH_QUEUES
// queues (default 100,000), one job each, by one server's deleter from the DELETE to the 404,
// while a canary namespace publishes a job and consumes it every 20 ms: the canary's round trips
// during the deletion against those before it, side by side in one run, say how much of Redis
// the deletion holds.
func BenchmarkNamespaceDeleteAtScale(b *testing.B) {
	nQueues := envInt("SLUICE_BENCH_QUEUES", 100_000)
	env := redistest.New(b)
	srv, _ := startBenchServer(b, Config{RedisURL: env.URL, Prefix: env.Prefix})
	ctx := context.Background()
	if _, _, err := srv.tokens.Create(ctx, tenant.CreateTokenParams{Namespace: "big"}); err != nil {
		b.Fatal(err)
	}
	parallel(b, nQueues, func(i int) error {
		_, err := srv.queue.Publish(ctx, queue.PublishParams{Namespace: "big", Queue: "q" + strconv.Itoa(i), Payload: []byte("x")})
		return err
	})
	adm := httptest.NewServer(srv.AdminHandler())
	b.Cleanup(adm.Close)
	canary := func(d time.Duration, until func() bool) []time.Duration {
		var rtts []time.Duration
		for end := time.Now().Add(d); time.Now().Before(end) && !until(); time.Sleep(20 * time.Millisecond) { // the canary's pace
			start := time.Now()
			if _, err := srv.queue.Publish(ctx, queue.PublishParams{Namespace: "canary", Queue: "c", Payload: []byte("x")}); err != nil {
				b.Fatal(err)
			}
			if ds, err := srv.queue.Consume(ctx, queue.ConsumeParams{Namespace: "canary", Queues: []string{"c"}}); err != nil || len(ds) != 1 {
				b.Fatalf("canary consume: %d, %v", len(ds), err)
			}
			rtts = append(rtts, time.Since(start))
		}
		return rtts
	}
	before := canary(10*time.Second, func() bool { return false })

	var took time.Duration
	var during []time.Duration
	for b.Loop() {
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, adm.URL+"/v1/namespaces/big", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
			b.Fatalf("DELETE: %d", resp.StatusCode)
		}
		gone := func() bool {
			r, err := http.Get(adm.URL + "/v1/namespaces/big")
			if err != nil {
				b.Fatal(err)
			}
			_ = r.Body.Close()
			return r.StatusCode == http.StatusNotFound
		}
		during = canary(30*time.Minute, gone)
		took = time.Since(start)
		if !gone() {
			b.Fatal("the namespace was not deleted within 30 minutes")
		}
	}
	b.ReportMetric(took.Seconds(), "delete-s")
	b.ReportMetric(float64(nQueues)/took.Seconds(), "queues-deleted/s")
	for name, rtts := range map[string][]time.Duration{"before": before, "during": during} {
		slices.Sort(rtts)
		if len(rtts) == 0 {
			continue
		}
		b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds())/1000, "canary-p50-ms-"+name)
		b.ReportMetric(float64(rtts[len(rtts)*99/100].Microseconds())/1000, "canary-p99-ms-"+name)
		b.ReportMetric(float64(rtts[len(rtts)-1].Microseconds())/1000, "canary-max-ms-"+name)
	}
}
