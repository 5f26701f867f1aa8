package ui

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// sample is one recorded sample of a queue (lua/sample.lua): its cumulative counters, the oldest
// ready job's age then (-1: unknown), and the processing times of the acks since the hash's sample
// before it (nil: unknown).
type sample struct {
	c      counters
	oldest time.Duration
	acks   queue.ProcessingTimes
}

// keptHistogram is a sample hash's field 'h': the slot of its latest sample and the queue's
// cumulative processing-time histogram then (slot -1: none kept).
type keptHistogram struct {
	slot int64
	hist queue.ProcessingTimes
}

// parseSamples reads a sample hash: field the slot, value
// "published:acked[:failed[:oldest_ms:histogram]]" (a sample written before failures were counted
// has failed -1, one written before ages and processing times were, -1 and nil); and the field 'h'.
// Malformed fields are skipped.
func parseSamples(h map[string]string) (map[int64]sample, keptHistogram) {
	samples := make(map[int64]sample, len(h)+1)
	kept := keptHistogram{slot: -1}
	for f, v := range h {
		if f == "h" {
			slot, hist, _ := strings.Cut(v, "|")
			if n, err := strconv.ParseInt(slot, 10, 64); err == nil {
				kept = keptHistogram{slot: n, hist: parseHistogram(hist)}
			}
			continue
		}
		m, err := strconv.ParseInt(f, 10, 64)
		parts := strings.Split(v, ":")
		if err != nil || len(parts) < 2 || len(parts) > 5 {
			continue
		}
		sm := sample{c: counters{0, 0, -1}, oldest: -1}
		ok := true
		for k, p := range parts[:min(len(parts), 3)] {
			n, err := strconv.ParseInt(p, 10, 64)
			ok = ok && err == nil
			sm.c[k] = n
		}
		if len(parts) == 5 {
			ms, err := strconv.ParseInt(parts[3], 10, 64)
			ok = ok && err == nil
			sm.oldest = time.Duration(ms) * time.Millisecond
			if parts[4] != "?" {
				sm.acks = parseHistogram(parts[4])
			}
		}
		if ok {
			samples[m] = sm
		}
	}
	return samples, kept
}

// formatHistogram writes a processing-time histogram as sample.lua reads it: "bucket.count" pairs
// joined by ',', by bucket.
func formatHistogram(p queue.ProcessingTimes) string {
	buckets := make([]int, 0, len(p))
	for b := range p {
		buckets = append(buckets, b)
	}
	sort.Ints(buckets)
	var sb strings.Builder
	for _, b := range buckets {
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(b))
		sb.WriteByte('.')
		sb.WriteString(strconv.FormatInt(p[b], 10))
	}
	return sb.String()
}

// parseHistogram reads formatHistogram's form (an empty histogram from ""); malformed pairs are
// skipped.
func parseHistogram(s string) queue.ProcessingTimes {
	p := queue.ProcessingTimes{}
	for _, pair := range strings.Split(s, ",") {
		b, c, ok := strings.Cut(pair, ".")
		bucket, err1 := strconv.Atoi(b)
		n, err2 := strconv.ParseInt(c, 10, 64)
		if ok && err1 == nil && err2 == nil && n > 0 {
			p[bucket] = n
		}
	}
	return p
}

// fillUnchanged gives each slot between two samples with the same counters the earlier sample's
// counters: a quiet queue, sampled only every quietEvery (Sampler), did nothing in between, so
// its chart shows zeros there rather than no data. The oldest ready job's age goes linearly from
// one sample's to the other's (a job nobody takes ages so); processing times stay unknown.
func fillUnchanged(samples map[int64]sample) {
	slots := make([]int64, 0, len(samples))
	for m := range samples {
		slots = append(slots, m)
	}
	slices.Sort(slots)
	for i := 1; i < len(slots); i++ {
		a, b := samples[slots[i-1]], samples[slots[i]]
		if a.c != b.c || slots[i]-slots[i-1] > 2*daySlots { // a day chart's span at most
			continue
		}
		span := slots[i] - slots[i-1]
		for m := slots[i-1] + 1; m < slots[i]; m++ {
			oldest := a.oldest
			if a.oldest >= 0 && b.oldest >= 0 {
				oldest = a.oldest + (b.oldest-a.oldest)*time.Duration(m-slots[i-1])/time.Duration(span)
			}
			samples[m] = sample{c: a.c, oldest: oldest}
		}
	}
}
