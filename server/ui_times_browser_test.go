package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// TestQueueTimesInChromium: on a queue's page opened while a job waits, the oldest ready job's
// age counts up live; jobs held for at least 300 ms before their acks show as a processing time
// of that size in the p50 and p99 figures, the processing-time chart's legend and its line; once
// no job is ready the age says "–" again. The overview shows the same figures in its columns.
func TestQueueTimesInChromium(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.UISampleInterval = 50 * time.Millisecond })
	ctx := ctxT(t)
	publish := func(n int) {
		for i := range n {
			if _, err := ts.Queue.Publish(ctx, queue.PublishParams{Namespace: "shop", Queue: "slow", Payload: []byte(strconv.Itoa(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(1)
	testwait.Until(t, time.Minute, "the queue's first sample", func() bool {
		n, err := ts.env.Client.HExists(ctx, ts.env.Prefix+":ui:throughput:{shop:slow}", "h").Result()
		return err == nil && n
	})
	b, _ := openDashboard(t, ts)
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/slow")
	waitText(t, b, "#pt-chart figcaption", "Processing time")
	// The age is shown in ms, then s: wait until it reads at least a second.
	waitText(t, b, "#oldest-ready", " s")
	if got := b.Text("#span-p50"); got != "–" {
		t.Fatalf("p50 before any ack: %q, want –", got)
	}

	publish(3)
	ds, err := ts.Queue.Consume(ctx, queue.ConsumeParams{Namespace: "shop", Queues: []string{"slow"}, Count: 4})
	if err != nil || len(ds) != 4 {
		t.Fatalf("consume: %d %v", len(ds), err)
	}
	leased := time.Now()
	testwait.Until(t, time.Minute, "300 ms of processing", func() bool { return time.Since(leased) > 300*time.Millisecond })
	for _, d := range ds {
		if err := ts.Queue.Ack(ctx, queue.AckParams{Namespace: "shop", Queue: "slow", ID: d.ID, Delivery: d.Delivery}); err != nil {
			t.Fatal(err)
		}
	}
	held := time.Since(leased)
	atLeast300 := func(sel string) func() error {
		return func() error {
			got := b.Text(sel)
			v, unit, _ := strings.Cut(got, " ")
			ms, err := strconv.ParseFloat(v, 64)
			if unit == "s" {
				ms *= 1000
			}
			// A quantile reads as its bucket's middle: within 9% of the time.
			if err != nil || (unit != "ms" && unit != "s") || ms < 300*0.91 || ms > float64(held.Milliseconds())*1.1 {
				return fmt.Errorf("%s shows %q, want between 300 ms and %v", sel, got, held)
			}
			return nil
		}
	}
	for _, sel := range []string{"#span-p50", "#span-p99", "#pt-chart-last-p99", "#pt-chart-peak-p50"} {
		b.WaitUntil(time.Minute, atLeast300(sel))
	}
	if pts := browsertest.Eval[string](b, `document.querySelector('#pt-chart polyline.s2').getAttribute("points")`); pts == "" {
		t.Fatal("the p99 line has no point")
	}
	waitText(t, b, "#oldest-ready", "–")

	b.Navigate(ts.AdminURL + "/ui/")
	b.WaitUntil(time.Minute, atLeast300(`[data-live="shop/slow:hour:p99"]`))
	waitText(t, b, `[data-live="shop/slow:oldest"]`, "–")
}
