package queue

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/internal/startstop"
)

// MaintainerConfig configures a Maintainer.
type MaintainerConfig struct {
	// Interval between passes. Default 500ms, so queues no consumer reads see due jobs promoted
	// and expired leases handled within about half a second.
	Interval time.Duration
	// Batch is the most queues a pass takes from each shard of the due index (one shard on a
	// standalone server, one per hash slot on a Cluster). Default 1000; what is left waits for
	// the next pass.
	Batch int
	// Budget is the time after which a pass starts no more work; what is left waits for the next
	// pass. Default: Interval.
	Budget time.Duration
	// SweepEvery is how often the registry of queues is swept to index the queues the due index
	// may lack (jobs stored by a version of Sluice that did not keep it), a few hundred queues a
	// pass. Default 1h.
	SweepEvery time.Duration
	// Logger receives pass errors and the queues whose housekeeping failed. Default: the client's
	// logger.
	Logger *slog.Logger
}

func (c MaintainerConfig) withDefaults() MaintainerConfig {
	c.Interval = cmp.Or(c.Interval, 500*time.Millisecond)
	c.Batch = cmp.Or(c.Batch, 1000)
	c.Budget = cmp.Or(c.Budget, c.Interval)
	c.SweepEvery = cmp.Or(c.SweepEvery, time.Hour)
	return c
}

// Maintainer runs the housekeeping of queues nobody is reading, in the background: due delayed
// jobs become ready, expired leases are retried or dead-lettered, expired jobs disappear, and the
// dead letter and results are trimmed. A pass visits only the queues that have something due, as
// the due index says (the scripts that make such work record it there in the same call), so its
// cost follows the work that is due, not the number of queues. A queue whose housekeeping fails
// is logged and tried again after a backoff; it never holds up the others. Consumers do the same
// housekeeping for the queues they read. Any number of processes may run a Maintainer: every step
// is an atomic script that moves a bounded batch.
type Maintainer struct {
	startstop.Base // the loop's lifecycle: Stop is Base.Stop

	client *Client
	cfg    MaintainerConfig
}

// NewMaintainer returns a stopped Maintainer for the client's queues.
func NewMaintainer(client *Client, cfg MaintainerConfig) *Maintainer {
	cfg = cfg.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = client.cfg.Logger
	}
	return &Maintainer{client: client, cfg: cfg}
}

var _ startstop.Service = (*Maintainer)(nil)

// Start runs a pass at once and then every Interval until ctx ends or Stop is called, which
// waits for the pass under way. It returns startstop.ErrAlreadyStarted while the loop runs.
func (m *Maintainer) Start(ctx context.Context) error {
	return m.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, m.cfg.Interval, m.pass)
	})
}

// pass is one step of the loop: the queues whose housekeeping failed are logged one by one and
// tried again after their backoff; a pass that failed as a whole is logged and the next one tries
// again.
func (m *Maintainer) pass(ctx context.Context) {
	res, err := m.client.maintainPass(ctx, m.cfg)
	if ctx.Err() != nil {
		return
	}
	for _, f := range res.failures {
		m.cfg.Logger.Warn("queue maintenance failed", slog.String("namespace", f.queue.Namespace),
			slog.String("queue", f.queue.Queue), slog.Int("failures", f.count),
			slog.Duration("retry_in", f.retryIn), slog.Any("error", f.err))
	}
	if err != nil {
		m.cfg.Logger.Warn("queue maintenance pass failed", slog.Any("error", err))
	}
}
