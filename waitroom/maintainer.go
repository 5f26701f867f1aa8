package waitroom

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/startstop"
)

// MaintainerConfig configures a Maintainer.
type MaintainerConfig struct {
	// Interval between passes. Default 1s.
	Interval time.Duration
}

// Maintainer runs the housekeeping of the rooms in the background: visitors who stopped polling
// for queue_timeout leave the line, idle slots are freed, counters are trimmed, each in bounded
// batches, in the rooms with something due (Client.MaintainOnce); and it refreshes this process's cached
// settings of the rooms it served since the last refresh (a room idle meanwhile reloads at its
// next use). Any number of processes may run one: every step is one atomic script.
type Maintainer struct {
	startstop.Base
	client *Client
	cfg    MaintainerConfig
	// refreshes counts the settings refreshes done (for tests: how many have passed).
	refreshes atomic.Int64
}

var _ startstop.Service = (*Maintainer)(nil)

// NewMaintainer returns a stopped Maintainer for the client's rooms.
func NewMaintainer(client *Client, cfg MaintainerConfig) *Maintainer {
	cfg.Interval = cmp.Or(cfg.Interval, time.Second)
	return &Maintainer{client: client, cfg: cfg}
}

// Start runs passes until ctx ends or Stop is called, which waits for the pass under way. It
// returns at once, or startstop.ErrAlreadyStarted while the loop runs.
func (m *Maintainer) Start(ctx context.Context) error { return m.Run(ctx, m.run) }

// run passes every Interval and refreshes the cached settings every ConfigRefresh, each on its
// own ticker: a refresh is due on its own clock, not after a pass.
func (m *Maintainer) run(ctx context.Context) {
	maintain := time.NewTicker(m.cfg.Interval)
	defer maintain.Stop()
	refresh := time.NewTicker(m.client.cfg.ConfigRefresh + 1) // +1: a ticker needs a positive period
	defer refresh.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-maintain.C:
			if _, err := m.client.MaintainOnce(ctx); err != nil && ctx.Err() == nil {
				m.client.cfg.Logger.Warn("waitroom maintenance pass failed", slog.Any("error", err))
			}
		case <-refresh.C:
			for _, r := range m.client.handles() {
				if err := r.refresh(ctx); err != nil && !errors.Is(err, ErrRoomNotFound) && ctx.Err() == nil {
					m.client.cfg.Logger.Warn("waitroom settings refresh failed", slog.String("room", r.name), slog.Any("error", err))
				}
			}
			m.refreshes.Add(1)
		}
	}
}
