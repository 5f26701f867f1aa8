package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// TestOverviewLiveInChromium: on an overview loaded before the queue existed, a queue appears
// without a reload, its failure rate follows acks and nacks, the queue's chart counts exactly the
// jobs published and failed since its first sample, and the queue disappears once deleted.
func TestOverviewLiveInChromium(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.UISampleInterval = 50 * time.Millisecond })
	ctx := ctxT(t)
	tok := ts.token(t, "shop")
	b, _ := openDashboard(t, ts)
	row := `#live-layout tr[data-queue="fresh"]`
	if browsertest.Eval[bool](b, `document.querySelector('`+row+`') !== null`) {
		t.Fatal("the queue is listed before it exists")
	}

	wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/fresh/jobs", tok, `{"payload":"first"}`), 201, "")
	waitText(t, b, row, "fresh")
	waitText(t, b, `[data-live="shop/fresh:ready"]`, "1")
	testwait.Until(t, time.Minute, "the queue's first sample", func() bool {
		n, err := ts.env.Client.Exists(ctx, ts.env.Prefix+":ui:throughput:{shop:fresh}").Result()
		return err == nil && n == 1
	})

	// A burst of 7: the chart's total and peak say 7, its axis reaches at least that.
	for i := range 7 {
		wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/fresh/jobs", tok, fmt.Sprintf(`{"payload":%d}`, i)), 201, "")
	}
	ds, err := ts.Queue.Consume(ctx, queue.ConsumeParams{Namespace: "shop", Queues: []string{"fresh"}, Count: 8})
	if err != nil || len(ds) != 8 {
		t.Fatalf("consume: %d %v", len(ds), err)
	}
	for i, d := range ds {
		if i < 2 {
			if _, err := ts.Queue.Nack(ctx, queue.NackParams{Namespace: "shop", Queue: "fresh", ID: d.ID, Delivery: d.Delivery, Error: "boom"}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := ts.Queue.Ack(ctx, queue.AckParams{Namespace: "shop", Queue: "fresh", ID: d.ID, Delivery: d.Delivery}); err != nil {
			t.Fatal(err)
		}
	}
	// 2 of 8 finished deliveries failed (the first job was published before the first sample,
	// but its delivery came after it).
	waitText(t, b, `[data-live="shop/fresh:failrate"]`, "25.0%")

	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/fresh")
	waitText(t, b, "#sum-pub", "7")
	waitText(t, b, "#sum-ack", "6")
	waitText(t, b, "#sum-fail", "2")
	if top := b.Text("#chart-max"); top != "10" {
		t.Fatalf("the chart's axis tops at %q, want 10 for a peak of 7", top)
	}
	if pts := browsertest.Eval[string](b, `document.querySelector('#queue-chart polyline.s0').getAttribute("points")`); !strings.Contains(pts, ",34.1") {
		t.Fatalf("the published line does not reach 7 of 10: %s", pts)
	}

	b.Navigate(ts.AdminURL + "/ui/")
	waitText(t, b, row, "fresh")
	if _, err := ts.Queue.DeleteQueue(ctx, "shop", "fresh"); err != nil {
		t.Fatal(err)
	}
	b.WaitUntil(time.Minute, func() error {
		if browsertest.Eval[bool](b, `document.querySelector('`+row+`') !== null`) {
			return fmt.Errorf("the deleted queue is still listed")
		}
		return nil
	})
}

// TestQueueDayChartInChromium: the day chart draws a spike stored in the day's samples at its
// height, with the axis and the legend saying the same number.
func TestQueueDayChartInChromium(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := ctxT(t)
	if _, err := ts.Queue.Publish(ctx, queue.PublishParams{Namespace: "shop", Queue: "mail", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	now, err := ts.env.Client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Unix() / 900
	// Slots of 3 published, then a spike of 480, then 12; the current slot's sample is the
	// counter now (1), so it adds nothing.
	var fields []any
	for i, pub := range []int64{0, 3, 483, 495} {
		fields = append(fields, slot-4+int64(i), fmt.Sprintf("%d:0:0", pub))
	}
	fields = append(fields, slot, "1:0:0")
	if err := ts.env.Client.HSet(ctx, ts.env.Prefix+":ui:throughput-day:{shop:mail}", fields...).Err(); err != nil {
		t.Fatal(err)
	}
	b, _ := openDashboard(t, ts)
	b.Navigate(ts.AdminURL + "/ui/ns/shop/queues/mail")
	b.Run(chromedp.Click("#span-day"))
	waitText(t, b, "#queue-chart figcaption", "per 15 min over the last day")
	waitText(t, b, "#peak-pub", "480")
	waitText(t, b, "#sum-pub", "495")
	if top := b.Text("#chart-max"); top != "500" {
		t.Fatalf("the day chart's axis tops at %q, want 500", top)
	}
}
