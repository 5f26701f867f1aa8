package queue_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

func TestLatencyHistogramQuantiles(t *testing.T) {
	t.Parallel()
	var h queue.LatencyHistogram
	if h.P50() != 0 || h.P99() != 0 {
		t.Fatal("empty histogram has quantiles")
	}
	h = queue.LatencyHistogram{Count: 100, Buckets: []queue.LatencyBucket{
		{UpperBound: time.Millisecond, Count: 50},
		{UpperBound: 10 * time.Millisecond, Count: 49},
		{UpperBound: time.Second, Count: 1},
	}}
	if h.P50() != time.Millisecond || h.P99() != 10*time.Millisecond || h.Quantile(1) != time.Second {
		t.Fatalf("p50 %s p99 %s max %s", h.P50(), h.P99(), h.Quantile(1))
	}
}
