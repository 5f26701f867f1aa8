package queue_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// TestProcessingTimesQuantiles reads p50 and p99 from a histogram of 100 acks (98 around 10 ms,
// one around 1 s and one around 1 min) and from the difference of two readings.
func TestProcessingTimesQuantiles(t *testing.T) {
	t.Parallel()
	// Bucket b holds [2^(b/4), 2^((b+1)/4)) ms: 10 ms is in 13, 1 s in 39, 1 min in 63.
	later := queue.ProcessingTimes{13: 98 + 7, 39: 1, 63: 1}
	earlier := queue.ProcessingTimes{13: 7}
	got := later.Sub(earlier)
	if got.Count() != 100 {
		t.Fatalf("Sub counts %d acks, want 100", got.Count())
	}
	within := func(d, want time.Duration) bool { return d > want*90/100 && d < want*110/100 }
	p50, ok := got.Quantile(0.5)
	if !ok || !within(p50, 10*time.Millisecond) {
		t.Errorf("p50 %v, %v; want about 10 ms", p50, ok)
	}
	p99, _ := got.Quantile(0.99)
	if !within(p99, time.Second) {
		t.Errorf("p99 %v, want about 1 s", p99)
	}
	if p100, _ := got.Quantile(1); !within(p100, time.Minute) {
		t.Errorf("p100 %v, want about 1 min", p100)
	}
	if _, ok := earlier.Sub(earlier).Quantile(0.5); ok {
		t.Error("an empty histogram has a p50")
	}
}
