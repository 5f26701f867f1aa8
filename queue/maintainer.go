package queue

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/internal/startstop"
)

// MaintainerConfig configures a Maintainer.
type MaintainerConfig struct {
	// Interval between passes. Default 500ms, so queues no consumer reads see due jobs promoted
	// and expired leases handled within about half a second.
	Interval time.Duration
	// Logger receives pass errors. Default: the client's logger.
	Logger *slog.Logger
}

// Maintainer runs the housekeeping of every registered queue in the background: due delayed jobs
// become ready, expired leases are retried or dead-lettered, expired jobs disappear, and the dead
// letter and results are trimmed. Consumers do the same for the queues they read, so the
// maintainer matters for queues nobody is reading. Any number of processes may run one: every step
// is an atomic script that moves a bounded batch.
type Maintainer struct {
	startstop.Base // the loop's lifecycle: Stop is Base.Stop

	client *Client
	cfg    MaintainerConfig
}

// NewMaintainer returns a stopped Maintainer for the client's queues.
func NewMaintainer(client *Client, cfg MaintainerConfig) *Maintainer {
	cfg.Interval = cmp.Or(cfg.Interval, 500*time.Millisecond)
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

// pass is one step of the loop: a failed pass is logged and the next one tries again.
func (m *Maintainer) pass(ctx context.Context) {
	if _, err := m.client.MaintainOnce(ctx); err != nil && ctx.Err() == nil {
		m.cfg.Logger.Warn("queue maintenance pass failed", slog.Any("error", err))
	}
}

// MaintainResult counts what one pass did.
type MaintainResult struct {
	Queues   int // queues visited
	Promoted int // delayed jobs made ready
	Reaped   int // expired leases handled
	Dropped  int // dead jobs and results trimmed
}

// MaintainOnce runs one housekeeping step on every registered queue, pipelined: one round trip per
// namespace plus one for the namespace list.
func (c *Client) MaintainOnce(ctx context.Context) (MaintainResult, error) {
	var res MaintainResult
	namespaces, err := c.Namespaces(ctx)
	if err != nil {
		return res, err
	}
	for _, ns := range namespaces {
		queues, err := c.Queues(ctx, ns)
		if err != nil {
			return res, err
		}
		if len(queues) == 0 {
			continue
		}
		done, err := c.store.Maintain(ctx, ns, queues)
		res.Promoted += done.Promoted
		res.Reaped += done.Reaped
		res.Dropped += done.Dropped
		if err != nil {
			return res, fmt.Errorf("queue: maintain: %w", err)
		}
		res.Queues += len(queues)
	}
	return res, nil
}
