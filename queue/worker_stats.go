package queue

import (
	"math"
	"sync/atomic"
	"time"
)

// WorkerStats counts what this process's workers of a Queue did since it was made (every Consume
// call on the Queue value adds to the same counts). Redis-wide counts are in Queue.Stats.
type WorkerStats struct {
	Running      int64 // handlers running now
	Processed    int64 // handler runs that finished: Succeeded + Failed
	Succeeded    int64
	Failed       int64 // errors, panics and timeouts; each one is Retried, DeadLettered or Expired
	Retried      int64 // failures scheduled for another try
	DeadLettered int64 // failures sent to the dead letter (out of tries, SkipRetry, undecodable)
	Expired      int64 // failures whose job's ttl ended before the next try
	Panics       int64 // handler panics (also counted in Failed)
	Released     int64 // jobs handed back unprocessed at shutdown
	LeasesLost   int64 // acks, nacks and lease extensions that found the lease gone: the job may run again
	Latency      LatencyHistogram
}

// LatencyHistogram is a distribution of handler run times in log-scale buckets (four per power of
// two, from 1µs to about 18 hours), so quantiles are within 19% of the truth.
type LatencyHistogram struct {
	Count   int64
	Sum     time.Duration
	Buckets []LatencyBucket // non-cumulative, ascending, empty buckets left out
}

// LatencyBucket counts the runs that took at most UpperBound (and more than the previous bucket's).
type LatencyBucket struct {
	UpperBound time.Duration
	Count      int64
}

// Quantile returns the upper bound of the bucket holding the q-th (0..1) fastest run, or 0 when
// nothing was measured.
func (h LatencyHistogram) Quantile(q float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	rank := int64(math.Ceil(min(max(q, 0), 1) * float64(h.Count)))
	rank = max(rank, 1)
	var seen int64
	for _, b := range h.Buckets {
		seen += b.Count
		if seen >= rank {
			return b.UpperBound
		}
	}
	return h.Buckets[len(h.Buckets)-1].UpperBound
}

// P50 is Quantile(0.5).
func (h LatencyHistogram) P50() time.Duration { return h.Quantile(0.5) }

// P99 is Quantile(0.99).
func (h LatencyHistogram) P99() time.Duration { return h.Quantile(0.99) }

// latencyBuckets: bucket i holds durations up to 2^((i+1)/4) µs.
const latencyBuckets = 4 * 46

type workerCounters struct {
	running, succeeded, failed, retried, dead, expired, panics, released, lost atomic.Int64
	sumNs                                                                      atomic.Int64
	buckets                                                                    [latencyBuckets]atomic.Int64
}

func (c *workerCounters) observe(d time.Duration) {
	c.sumNs.Add(int64(d))
	c.buckets[latencyBucket(d)].Add(1)
}

func latencyBucket(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us <= 1 {
		return 0
	}
	i := int(math.Ceil(4*math.Log2(us))) - 1
	return min(max(i, 0), latencyBuckets-1)
}

func latencyBound(i int) time.Duration {
	return time.Duration(math.Pow(2, float64(i+1)/4) * float64(time.Microsecond))
}

func (c *workerCounters) snapshot() WorkerStats {
	s := WorkerStats{
		Running:      c.running.Load(),
		Succeeded:    c.succeeded.Load(),
		Failed:       c.failed.Load(),
		Retried:      c.retried.Load(),
		DeadLettered: c.dead.Load(),
		Expired:      c.expired.Load(),
		Panics:       c.panics.Load(),
		Released:     c.released.Load(),
		LeasesLost:   c.lost.Load(),
	}
	s.Processed = s.Succeeded + s.Failed
	s.Latency.Sum = time.Duration(c.sumNs.Load())
	for i := range c.buckets {
		if n := c.buckets[i].Load(); n > 0 {
			s.Latency.Count += n
			s.Latency.Buckets = append(s.Latency.Buckets, LatencyBucket{UpperBound: latencyBound(i), Count: n})
		}
	}
	return s
}

// WorkerStats returns a snapshot of what this process's workers of the queue did.
func (q *Queue[T]) WorkerStats() WorkerStats { return q.stats.snapshot() }
