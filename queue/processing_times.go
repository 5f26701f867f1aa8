package queue

import (
	"math"
	"slices"
	"time"
)

// ProcessingTimes counts a queue's acked deliveries by processing time: the time from the consume
// that leased the job to the ack that finished it (nacks, expired leases and deliveries leased
// before the upgrade that started counting are not in it). It is a histogram: key a bucket, value
// how many acks fell in it. Bucket b holds the times from 2^(b/4) ms up to 2^((b+1)/4) ms (bucket
// 0 also those under a millisecond), so a quantile read from it is within 9% of the exact one.
//
// The ack script adds to it in the queue's stats hash (one HINCRBY per bucket an ack call falls
// in), so the counts are cumulative since the queue was created: Sub of two readings is the
// histogram of the acks between them.
type ProcessingTimes map[int]int64

// processingBucketsPerDoubling is the histogram's resolution (PT_STEPS in lib.lua).
const processingBucketsPerDoubling = 4

// ProcessingBucketMiddle is the time a quantile that falls in bucket b reads as: the bucket's
// geometric middle.
func ProcessingBucketMiddle(b int) time.Duration {
	ms := math.Exp2((float64(b) + 0.5) / processingBucketsPerDoubling)
	return time.Duration(ms * float64(time.Millisecond))
}

// Count is how many acks the histogram holds.
func (p ProcessingTimes) Count() int64 {
	var n int64
	for _, c := range p {
		n += max(c, 0)
	}
	return n
}

// Sub is the histogram of the acks counted in p and not in earlier (an earlier reading of the same
// queue): buckets that did not grow are left out.
func (p ProcessingTimes) Sub(earlier ProcessingTimes) ProcessingTimes {
	out := ProcessingTimes{}
	for b, c := range p {
		if d := c - earlier[b]; d > 0 {
			out[b] = d
		}
	}
	return out
}

// Add is the histogram of the acks of p and of other together.
func (p ProcessingTimes) Add(other ProcessingTimes) ProcessingTimes {
	out := make(ProcessingTimes, len(p)+len(other))
	for b, c := range p {
		out[b] += c
	}
	for b, c := range other {
		out[b] += c
	}
	return out
}

// Quantile is the processing time under which the share q (0 < q <= 1) of the acks fell, read as
// the middle of the bucket it falls in, and false when the histogram is empty.
func (p ProcessingTimes) Quantile(q float64) (time.Duration, bool) {
	total := p.Count()
	if total == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(total)))
	rank = min(max(rank, 1), total)
	buckets := make([]int, 0, len(p))
	for b, c := range p {
		if c > 0 {
			buckets = append(buckets, b)
		}
	}
	slices.Sort(buckets)
	var seen int64
	for _, b := range buckets {
		seen += p[b]
		if seen >= rank {
			return ProcessingBucketMiddle(b), true
		}
	}
	return ProcessingBucketMiddle(buckets[len(buckets)-1]), true
}
