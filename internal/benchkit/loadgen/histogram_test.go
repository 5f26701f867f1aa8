package loadgen

import (
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, 1, 31, 32, 33, 63, 64, 100, 999, time.Microsecond, 1234567, time.Second, time.Hour} {
		i := bucketOf(d)
		if lo, hi := lowerBound(i), lowerBound(i+1); d < lo || d >= hi {
			t.Errorf("%v in bucket %d = [%v, %v)", d, i, lo, hi)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	t.Parallel()
	var a, b histogram
	for i := 1; i <= 1000; i++ {
		a.record(time.Duration(i) * time.Microsecond)
	}
	b.record(10 * time.Millisecond)
	a.merge(&b)
	check := func(q float64, want time.Duration) {
		t.Helper()
		got := a.quantile(q)
		if diff := float64(got-want) / float64(want); diff < -0.04 || diff > 0.04 {
			t.Errorf("quantile(%v) = %v, want about %v", q, got, want)
		}
	}
	check(0.5, 500*time.Microsecond)
	check(0.99, 990*time.Microsecond)
	check(1, 10*time.Millisecond)
	var empty histogram
	if empty.quantile(0.5) != 0 {
		t.Errorf("empty quantile not 0")
	}
}
