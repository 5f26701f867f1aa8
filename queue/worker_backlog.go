package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/startstop"
)

// BacklogQueue names a queue a BacklogMonitor watches and its thresholds.
type BacklogQueue struct {
	Namespace string
	Queue     string
	// Depth alerts when ready + delayed jobs are at least this many. 0: depth is not watched.
	Depth int64
	// DeadGrowth alerts when at least this many jobs went to the dead letter since the previous
	// check (1: any). 0: the dead letter is not watched.
	DeadGrowth int64
}

// Backlog returns the BacklogQueue entry of q with the given thresholds.
func (q *Queue[T]) Backlog(depth, deadGrowth int64) BacklogQueue {
	return BacklogQueue{Namespace: q.ns, Queue: q.name, Depth: depth, DeadGrowth: deadGrowth}
}

// BacklogKind says which threshold an alert is about.
type BacklogKind string

// The thresholds a BacklogMonitor checks.
const (
	BacklogDepth      BacklogKind = "depth"       // ready + delayed jobs
	BacklogDeadGrowth BacklogKind = "dead_growth" // jobs dead-lettered since the previous check
)

// BacklogAlert reports a queue over one of its thresholds at one check.
type BacklogAlert struct {
	Namespace string
	Queue     string
	Kind      BacklogKind
	Value     int64 // the depth, or the jobs dead-lettered since the previous check
	Threshold int64
	Stats     Stats // the queue's stats at the check
}

// BacklogConfig configures a BacklogMonitor.
type BacklogConfig struct {
	// Queues to watch. Required.
	Queues []BacklogQueue
	// Interval between checks. Default 10s.
	Interval time.Duration
	// OnAlert is called, from the monitor's goroutine, for every threshold a queue is over at every
	// check (so it repeats while the queue stays over). Default none: alerts are only logged.
	OnAlert func(ctx context.Context, a BacklogAlert)
	// Logger receives a warning when a queue goes over a threshold and a note when it is back
	// under. Default: the client's logger.
	Logger *slog.Logger
}

// BacklogMonitor watches queues' depths and dead letters, with one pipelined Stats round trip per
// namespace per check.
type BacklogMonitor struct {
	startstop.Base // the loop's lifecycle: Stop is Base.Stop

	client *Client
	cfg    BacklogConfig

	checkMu  sync.Mutex
	lastDead map[BacklogQueue]int64 // DeadLettered counter at the previous check
	firing   map[backlogKey]bool
}

var _ startstop.Service = (*BacklogMonitor)(nil)

type backlogKey struct {
	q    BacklogQueue
	kind BacklogKind
}

// NewBacklogMonitor returns a stopped monitor.
func NewBacklogMonitor(client *Client, cfg BacklogConfig) (*BacklogMonitor, error) {
	if client == nil {
		return nil, errors.New("queue: nil client")
	}
	cfg.Interval = cmp.Or(cfg.Interval, 10*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = client.cfg.Logger
	}
	var errs []error
	if len(cfg.Queues) == 0 {
		errs = append(errs, errors.New("backlog config: Queues must name at least one queue"))
	}
	for i, q := range cfg.Queues {
		if err := validateQueue(q.Namespace, q.Queue); err != nil {
			errs = append(errs, fmt.Errorf("backlog config: Queues[%d]: %w", i, err))
		}
		if q.Depth < 0 || q.DeadGrowth < 0 {
			errs = append(errs, fmt.Errorf("backlog config: Queues[%d]: thresholds must not be negative", i))
		}
	}
	if cfg.Interval < time.Millisecond {
		errs = append(errs, errors.New("backlog config: Interval must be at least 1ms"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &BacklogMonitor{
		client:   client,
		cfg:      cfg,
		lastDead: make(map[BacklogQueue]int64),
		firing:   make(map[backlogKey]bool),
	}, nil
}

// Start checks at once and then every Interval until ctx ends or Stop is called, which waits for
// the check under way. It returns startstop.ErrAlreadyStarted while the loop runs.
func (m *BacklogMonitor) Start(ctx context.Context) error {
	return m.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, m.cfg.Interval, m.step)
	})
}

// step is one check of the loop, its alerts handed to OnAlert.
func (m *BacklogMonitor) step(ctx context.Context) {
	alerts, err := m.Check(ctx)
	if err != nil && ctx.Err() == nil {
		m.cfg.Logger.Warn("queue backlog check failed", slog.Any("error", err))
	}
	if m.cfg.OnAlert != nil {
		for _, a := range alerts {
			m.cfg.OnAlert(ctx, a)
		}
	}
}

// Check reads the watched queues' stats once and returns the thresholds they are over; it does
// not call OnAlert. Dead-letter growth is counted from the previous check (the first check sets
// the baseline).
func (m *BacklogMonitor) Check(ctx context.Context) ([]BacklogAlert, error) {
	m.checkMu.Lock()
	defer m.checkMu.Unlock()
	byNS := map[string][]int{}
	var order []string
	for i, q := range m.cfg.Queues {
		if _, ok := byNS[q.Namespace]; !ok {
			order = append(order, q.Namespace)
		}
		byNS[q.Namespace] = append(byNS[q.Namespace], i)
	}
	var alerts []BacklogAlert
	var errs []error
	for _, ns := range order {
		idx := byNS[ns]
		names := make([]string, len(idx))
		for j, i := range idx {
			names[j] = m.cfg.Queues[i].Queue
		}
		stats, err := m.client.StatsMany(ctx, ns, names)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for j, i := range idx {
			alerts = append(alerts, m.judge(m.cfg.Queues[i], stats[j])...)
		}
	}
	return alerts, errors.Join(errs...)
}

func (m *BacklogMonitor) judge(q BacklogQueue, s Stats) []BacklogAlert {
	var out []BacklogAlert
	check := func(kind BacklogKind, value, threshold int64) {
		key := backlogKey{q: q, kind: kind}
		over := value >= threshold
		attrs := []any{slog.String("namespace", q.Namespace), slog.String("queue", q.Queue),
			slog.String("kind", string(kind)), slog.Int64("value", value), slog.Int64("threshold", threshold)}
		switch {
		case over && !m.firing[key]:
			m.cfg.Logger.Warn("queue backlog over threshold", attrs...)
		case !over && m.firing[key]:
			m.cfg.Logger.Info("queue backlog back under threshold", attrs...)
		}
		m.firing[key] = over
		if over {
			out = append(out, BacklogAlert{Namespace: q.Namespace, Queue: q.Queue, Kind: kind,
				Value: value, Threshold: threshold, Stats: s})
		}
	}
	if q.Depth > 0 {
		check(BacklogDepth, s.Ready+s.Delayed, q.Depth)
	}
	if q.DeadGrowth > 0 {
		last, seen := m.lastDead[q]
		m.lastDead[q] = s.DeadLettered
		if seen {
			check(BacklogDeadGrowth, max(s.DeadLettered-last, 0), q.DeadGrowth)
		}
	}
	return out
}
