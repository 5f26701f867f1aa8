package ui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/queue"
)

const (
	// window is the chart's span in minutes.
	window = 60
	// sampleTTL lets a queue's samples go when no server samples it any more.
	sampleTTL = 2 * time.Hour
)

// Sampler records, for every queue, the cumulative published and acked counters once a minute
// in a hash of at most an hour of samples; the overview draws throughput from their differences.
// The hot path (publish, ack) pays nothing for it, and the cost is one small script per queue per
// SampleInterval.
type Sampler struct {
	startstop.Base
	cfg     Config
	scripts *redisx.ScriptRunner
}

var _ startstop.Service = (*Sampler)(nil)

func newSampler(cfg Config, scripts *redisx.ScriptRunner) *Sampler {
	return &Sampler{cfg: cfg, scripts: scripts}
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

// sample records the current minute's sample of the queues names of namespace ns.
func (s *Sampler) sample(ctx context.Context, ns string, names []string) error {
	q := s.cfg.Queue
	stats, err := q.StatsMany(ctx, ns, names)
	if err != nil {
		return err
	}
	calls := make([]redisx.ScriptCall, len(names))
	for i, name := range names {
		calls[i] = redisx.ScriptCall{Name: "sample", Keys: []string{sampleKey(s.cfg.Prefix, q.HashTag(ns, name))},
			Args: []any{stats[i].Published, stats[i].Acked, window, int(sampleTTL / time.Second)}}
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
	return nil
}

// series is a queue's throughput per minute over the window, oldest first; a minute without both
// samples is -1 (no data).
type series struct {
	Published, Acked [window]int64
}

// throughput reads the samples of the queues (one pipelined HGETALL each, of at most window+2
// fields) and turns them into per-minute series ending at the last full minute.
func (u *UI) throughput(ctx context.Context, ns string, queues []string) ([]series, error) {
	pipe := u.cfg.Redis.Pipeline()
	tm := pipe.Time(ctx)
	cmds := make([]*redis.MapStringStringCmd, len(queues))
	for i, q := range queues {
		cmds[i] = pipe.HGetAll(ctx, sampleKey(u.cfg.Prefix, u.cfg.Queue.HashTag(ns, q)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("ui: throughput: %w", err)
	}
	now := tm.Val().Unix() / 60
	out := make([]series, len(queues))
	for i, c := range cmds {
		samples := map[int64][2]int64{}
		for f, v := range c.Val() {
			m, err1 := strconv.ParseInt(f, 10, 64)
			p, a, ok := strings.Cut(v, ":")
			pv, err2 := strconv.ParseInt(p, 10, 64)
			av, err3 := strconv.ParseInt(a, 10, 64)
			if err1 == nil && ok && err2 == nil && err3 == nil {
				samples[m] = [2]int64{pv, av}
			}
		}
		for j := range window {
			m := now - window + int64(j) // the minute [m, m+1) ends at most at now
			a, okA := samples[m]
			b, okB := samples[m+1]
			if !okA || !okB {
				out[i].Published[j], out[i].Acked[j] = -1, -1
				continue
			}
			out[i].Published[j], out[i].Acked[j] = max(0, b[0]-a[0]), max(0, b[1]-a[1])
		}
	}
	return out, nil
}

// points draws a series as the points of an SVG polyline in a 60×20 box, scaled to top; minutes
// without data sit on the baseline.
func points(s [window]int64, top int64) string {
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
func last(s [window]int64) int64 {
	for i := window - 1; i >= 0; i-- {
		if s[i] >= 0 {
			return s[i]
		}
	}
	return -1
}
