package loadgen

import (
	"math/bits"
	"time"
)

// histogram counts latencies in log-linear buckets: 32 buckets per power of two, so a quantile is
// off by at most about 3%, in a fixed 16 KiB whatever the run's length.
type histogram struct {
	counts [64 * subBuckets]uint64
	total  uint64
	max    time.Duration
}

const subBits = 5
const subBuckets = 1 << subBits

func bucketOf(d time.Duration) int {
	v := uint64(max(d, 0))
	if v < subBuckets {
		return int(v)
	}
	exp := bits.Len64(v) - subBits // ≥ 1
	return exp*subBuckets + int(v>>(exp-1))&(subBuckets-1)
}

// lowerBound is the smallest duration that falls in bucket i.
func lowerBound(i int) time.Duration {
	if i < subBuckets {
		return time.Duration(i)
	}
	exp := i / subBuckets
	return time.Duration((uint64(subBuckets) | uint64(i%subBuckets)) << (exp - 1))
}

func (h *histogram) record(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.total++
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// quantile returns the latency below which q (0..1) of the recorded ones fall: the midpoint of the
// bucket holding it.
func (h *histogram) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(q*float64(h.total) + 0.5)
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := lowerBound(i), lowerBound(i+1)
			return min(lo+(hi-lo)/2, h.max)
		}
	}
	return h.max
}
