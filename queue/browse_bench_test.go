package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// BenchmarkListJobs measures the dashboard's reads of a queue holding 1,000 ready and 1,000
// delayed jobs of 1 KiB (half of the delayed ones waiting for a retry, due after the others),
// side by side with Get of one job as the yardstick: a page of 20 ready jobs, a page of 20
// scheduled jobs, a page of the retrying jobs (it reads the 256 delayed records a call may read,
// all of them scheduled, and finds none) and SplitDelayed (the first fields of 256 delayed
// records). Each is one read-only script call, so its time is how long it holds Redis.
func BenchmarkListJobs(b *testing.B) {
	c, _ := benchClient(b)
	ctx := context.Background()
	body := []byte(strings.Repeat("x", 1024))
	var ps []queue.PublishParams
	for i := range 2000 {
		p := queue.PublishParams{Namespace: "bench", Queue: "q", Payload: body, Tries: 3}
		if i%2 == 1 {
			p.Delay = time.Hour
		}
		ps = append(ps, p)
	}
	for i := 0; i < len(ps); i += 500 {
		if _, err := c.PublishMany(ctx, ps[i:i+500]); err != nil {
			b.Fatal(err)
		}
	}
	// 500 deliveries fail and wait an hour for their retry.
	hour := time.Hour
	ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "bench", Queues: []string{"q"}, Count: 500})
	if err != nil || len(ds) != 500 {
		b.Fatalf("consume: %d %v", len(ds), err)
	}
	for _, d := range ds {
		if _, err := c.Nack(ctx, queue.NackParams{Namespace: "bench", Queue: "q", ID: d.ID, Delivery: d.Delivery, RetryAfter: &hour}); err != nil {
			b.Fatal(err)
		}
	}
	one, err := c.ListJobs(ctx, queue.ListJobsParams{Namespace: "bench", Queue: "q", State: queue.ListReady, Limit: 1})
	if err != nil || len(one.Jobs) != 1 {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"Get", func() error { _, err := c.Get(ctx, "bench", "q", one.Jobs[0].ID); return err }},
		{"ReadyPage20", func() error {
			_, err := c.ListJobs(ctx, queue.ListJobsParams{Namespace: "bench", Queue: "q", State: queue.ListReady, Limit: 20, Cursor: "400"})
			return err
		}},
		{"RetryingPage20", func() error {
			_, err := c.ListJobs(ctx, queue.ListJobsParams{Namespace: "bench", Queue: "q", State: queue.ListRetrying, Limit: 20})
			return err
		}},
		{"ScheduledPage20", func() error {
			_, err := c.ListJobs(ctx, queue.ListJobsParams{Namespace: "bench", Queue: "q", State: queue.ListScheduled, Limit: 20})
			return err
		}},
		{"SplitDelayed", func() error { _, err := c.SplitDelayed(ctx, "bench", "q"); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
