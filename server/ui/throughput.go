package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/queue"
)

const (
	// window is the hour chart's span in minutes (a point a minute).
	window = 60
	// sampleTTL lets a queue's samples go when no server samples it any more.
	sampleTTL = 2 * time.Hour
	// daySlot is the time a point of the day chart spans, and daySlots how many it has.
	daySlot  = 15 * time.Minute
	daySlots = 96
	// daySampleTTL lets a queue's day samples go when no server samples it any more.
	daySampleTTL = 26 * time.Hour
)

// Sampler records, for every queue, the cumulative published, acked and failed counters once a
// minute in a hash of at most an hour of samples, and once a daySlot in a hash of at most a day;
// the charts draw throughput from their differences.
// The hot path (publish, ack) pays nothing for it. A queue that moves costs one small script per
// SampleInterval; a quiet one (counters and ready, delayed and leased jobs unchanged since its
// sample before) is
// sampled every quietEvery only, and the charts read its unchanged stretch as zeros
// (fillUnchanged): 100,000 idle queues cost a few hundred calls a second, not tens of thousands.
type Sampler struct {
	startstop.Base
	cfg     Config
	scripts *redisx.ScriptRunner

	mu    sync.Mutex
	quiet map[sampledQueue]sampledState // what this process last sampled of each queue
}

// quietEvery is how often a quiet queue is sampled: often enough that each daySlot has a sample
// (the day chart stays whole) and a queue that starts moving again shows on the hour chart
// within it.
const quietEvery = 5 * time.Minute

// maxSampled bounds Sampler.quiet: past it the map starts over (every queue is sampled once
// more, then found quiet again); deleted queues' entries go so.
const maxSampled = 1_000_000

type sampledQueue struct{ ns, queue string }

type sampledState struct {
	shape queueShape
	next  time.Time // when it is sampled again; zero: at every pass
	// watched is until when a dashboard page shows the queue: it is sampled at every pass then,
	// so the page's current minute has its sample however quiet the queue was.
	watched time.Time
}

// watchFor is how long a dashboard page's read of a queue keeps it sampled at every pass: the
// pages read again every few seconds while they are open.
const watchFor = time.Minute

// watch keeps the queues of namespace ns sampled at every pass for watchFor: a dashboard page
// shows them.
func (s *Sampler) watch(ns string, names []string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range names {
		k := sampledQueue{ns, name}
		st := s.quiet[k]
		st.next, st.watched = time.Time{}, now.Add(watchFor)
		s.quiet[k] = st
	}
}

// queueShape is what a sample of a queue must find unchanged for the queue to count as quiet:
// its counters and how many jobs are ready, delayed and leased. A queue nobody touches keeps its
// shape while its oldest ready job ages (fillUnchanged draws that age).
type queueShape struct {
	c                      counters
	ready, delayed, leased int64
}

func shapeOf(st queue.Stats) queueShape {
	return queueShape{c: countersOf(st), ready: st.Ready, delayed: st.Delayed, leased: st.Leased}
}

var _ startstop.Service = (*Sampler)(nil)

func newSampler(cfg Config, scripts *redisx.ScriptRunner) *Sampler {
	return &Sampler{cfg: cfg, scripts: scripts, quiet: make(map[sampledQueue]sampledState)}
}

// Start samples at once and then every SampleInterval until Stop or ctx ends. A second Start
// while it runs is an error.
func (s *Sampler) Start(ctx context.Context) error {
	return s.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, s.cfg.SampleInterval, func(ctx context.Context) {
			if err := s.SampleOnce(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("dashboard throughput sample failed", "error", err)
			}
		})
	})
}

// sampleBatch is how many queues one step of SampleOnce samples (one StatsMany and one
// pipeline of sample scripts), so a namespace of 100,000 queues is sampled in bounded calls.
const sampleBatch = 500

// SampleOnce records the current minute's sample of every queue (where none is recorded yet),
// reading the registry a page at a time.
func (s *Sampler) SampleOnce(ctx context.Context) error {
	q := s.cfg.Queue
	return eachPage(func(after string) (queue.QueuesPageResult, error) {
		return q.NamespacesPage(ctx, queue.QueuesPageParams{After: after, Limit: sampleBatch})
	}, func(nss []string) error {
		for _, ns := range nss {
			err := eachPage(func(after string) (queue.QueuesPageResult, error) {
				return q.QueuesPage(ctx, queue.QueuesPageParams{Namespace: ns, After: after, Limit: sampleBatch})
			}, func(names []string) error { return s.sample(ctx, ns, names) })
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// eachPage calls use with every page that read returns, from the first to the last.
func eachPage(read func(after string) (queue.QueuesPageResult, error), use func([]string) error) error {
	after := ""
	for {
		page, err := read(after)
		if err != nil {
			return err
		}
		if len(page.Queues) > 0 {
			if err := use(page.Queues); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		after = page.Next
	}
}

// due returns the queues of names to sample now: all but the quiet ones sampled within quietEvery.
func (s *Sampler) due(ns string, names []string, now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(names))
	for _, name := range names {
		if st, ok := s.quiet[sampledQueue{ns, name}]; ok && now.Before(st.next) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// sampled remembers what was sampled of the queues names at now: a queue whose shape did not
// change since its sample before is quiet until now+quietEvery.
func (s *Sampler) sampled(ns string, names []string, stats []queue.Stats, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.quiet) >= maxSampled {
		clear(s.quiet)
	}
	for i, name := range names {
		k, shape := sampledQueue{ns, name}, shapeOf(stats[i])
		prev, ok := s.quiet[k]
		st := sampledState{shape: shape, watched: prev.watched}
		if ok && prev.shape == shape && !now.Before(prev.watched) {
			st.next = now.Add(quietEvery)
		}
		s.quiet[k] = st
	}
}

// sample records the current minute's sample of the queues names of namespace ns that are due.
func (s *Sampler) sample(ctx context.Context, ns string, names []string) error {
	q := s.cfg.Queue
	now := time.Now()
	if names = s.due(ns, names, now); len(names) == 0 {
		return nil
	}
	stats, err := q.StatsMany(ctx, ns, names)
	if err != nil {
		return err
	}
	calls := make([]redisx.ScriptCall, len(names))
	for i, name := range names {
		tag, c := q.HashTag(ns, name), countersOf(stats[i])
		calls[i] = redisx.ScriptCall{Name: "sample", Keys: []string{sampleKey(s.cfg.Prefix, tag), daySampleKey(s.cfg.Prefix, tag)},
			Args: []any{c[0], c[1], c[2], window, int(sampleTTL / time.Second), int(daySlot / time.Second), daySlots, int(daySampleTTL / time.Second),
				stats[i].OldestReady.Milliseconds(), formatHistogram(stats[i].ProcessingTimes)}}
	}
	cmds, err := s.scripts.RunMany(ctx, calls)
	if err != nil {
		return fmt.Errorf("ui: load sample script: %w", err)
	}
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return fmt.Errorf("ui: sample %s: %w", ns, err)
		}
	}
	s.sampled(ns, names, stats, now)
	return nil
}

// counters is a queue's cumulative published, acked and failed counts. Failed counts the
// deliveries that ended in another try or in the dead letter (a nack or an expired lease).
type counters [3]int64

func countersOf(st queue.Stats) counters {
	return counters{st.Published, st.Acked, st.Retried + st.DeadLettered}
}

// span is a chart's time axis: n points of slot each, read from the samples under key.
type span struct {
	Name string // "hour" or "day"
	key  func(prefix, queueTag string) string
	slot time.Duration
	n    int
}

var (
	hourSpan = span{Name: "hour", key: sampleKey, slot: time.Minute, n: window}
	daySpan  = span{Name: "day", key: daySampleKey, slot: daySlot, n: daySlots}
)

// spanOf is the span a page asks for with ?span= (the hour unless "day").
func spanOf(r *http.Request) span {
	if r.URL.Query().Get("span") == "day" {
		return daySpan
	}
	return hourSpan
}

// series is a queue's throughput per slot over a span, oldest first, the last point being the
// current slot so far; a slot without both samples is -1 (no data). P50 and P99 are the
// processing times of the slot's acks (-1: none, or unknown), Oldest the oldest ready job's age
// at the slot's end (-1: unknown).
type series struct {
	Published, Acked, Failed []int64
	P50, P99, Oldest         []time.Duration
	// Acks is the processing times of all the acks of the span's slots that have them.
	Acks queue.ProcessingTimes
}

// throughput reads the samples of the queues (one pipelined HGETALL each, of at most sp.n+3
// fields) and turns them into series over sp ending with the current slot, whose end is cur.
func (u *UI) throughput(ctx context.Context, sp span, ns string, queues []string, cur []queue.Stats) ([]series, error) {
	u.sampler.watch(ns, queues)
	pipe := u.cfg.Redis.Pipeline()
	tm := pipe.Time(ctx)
	cmds := make([]*redis.MapStringStringCmd, len(queues))
	for i, q := range queues {
		cmds[i] = pipe.HGetAll(ctx, sp.key(u.cfg.Prefix, u.cfg.Queue.HashTag(ns, q)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("ui: throughput: %w", err)
	}
	now := tm.Val().Unix() / int64(sp.slot/time.Second)
	out := make([]series, len(queues))
	for i, st := range cur[:len(cmds)] {
		samples, kept := parseSamples(cmds[i].Val())
		end := sample{c: countersOf(st), oldest: st.OldestReady}
		if kept.slot == now {
			end.acks = st.ProcessingTimes.Sub(kept.hist) // the current slot so far
		}
		samples[now+1] = end // the current slot ends now
		fillUnchanged(samples)
		s := series{Published: make([]int64, sp.n), Acked: make([]int64, sp.n), Failed: make([]int64, sp.n),
			P50: make([]time.Duration, sp.n), P99: make([]time.Duration, sp.n), Oldest: make([]time.Duration, sp.n)}
		for j := range sp.n {
			m := now - int64(sp.n) + 1 + int64(j) // the slot [m, m+1)
			a, okA := samples[m]
			b, okB := samples[m+1]
			for k, dst := range [][]int64{s.Published, s.Acked, s.Failed} {
				dst[j] = -1
				if okA && okB && a.c[k] >= 0 && b.c[k] >= 0 {
					dst[j] = max(0, b.c[k]-a.c[k])
				}
			}
			s.P50[j], s.P99[j], s.Oldest[j] = -1, -1, -1
			if okB {
				s.Oldest[j] = b.oldest
			}
			if okA && okB {
				if p, ok := b.acks.Quantile(0.5); ok {
					s.P50[j] = p
					s.P99[j], _ = b.acks.Quantile(0.99)
					s.Acks = s.Acks.Add(b.acks)
				}
			}
		}
		out[i] = s
	}
	return out, nil
}

// points draws a series as the points of an SVG polyline in a 60×20 box, scaled to top; minutes
// without data sit on the baseline.
func points(s []int64, top int64) string {
	var b strings.Builder
	top = max(top, 1)
	for i, v := range s {
		v = max(v, 0)
		y := 19 - float64(v)*18/float64(top)
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d,%.1f", i, y)
	}
	return b.String()
}

// last returns the most recent minute with data (-1: none).
func last(s []int64) int64 {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] >= 0 {
			return s[i]
		}
	}
	return -1
}
