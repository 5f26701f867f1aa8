package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue/internal/store"
)

// A queue's callback lane has an entry in the callback lanes' due index while it has work for a
// deliverer: the scripts that put a callback job on the lane, or schedule one, set the entry in
// the same call (never later than the work is due), and ConsumeCallbacks sets it to the lane's
// next work or removes it. A deliverer reads only the due entries (DueCallbackLanes), so what it
// costs follows the callback work that is due, not the number of lanes. The index has one key on a
// standalone server and a shard per hash slot on a Cluster, as the queues' due index.

// DueLanes is one read of the callback lanes' due index.
type DueLanes struct {
	// Lanes are the queues whose callback lane has work due, earliest first within each shard.
	Lanes []QueueRef
	// Now is Redis's time at the read: DeferCallbackLane takes times on this clock.
	Now time.Time
}

// DueCallbackLanes reads the queues whose callback lane has work due by Redis's clock, at most
// limit (1 or more) of each shard of the index. One TIME and one pipelined round trip.
func (c *Client) DueCallbackLanes(ctx context.Context, limit int) (DueLanes, error) {
	if limit < 1 {
		return DueLanes{}, invalid("limit", "%d is below 1", limit)
	}
	now, names, err := c.store.DueLanes(ctx, limit)
	if err != nil {
		return DueLanes{}, fmt.Errorf("queue: due callback lanes: %w", err)
	}
	return DueLanes{Lanes: queueRefs(names), Now: time.UnixMilli(now)}, nil
}

// DeferCallbackLane moves a lane's entry in the due index to at (Redis's time, as DueLanes.Now),
// when the entry is there: a deliverer whose visit of the lane failed tries it again then, and
// meanwhile the lane does not stand at the head of its shard in front of the others.
func (c *Client) DeferCallbackLane(ctx context.Context, lane QueueRef, at time.Time) error {
	if err := c.store.DeferLane(ctx, store.QueueName(lane), at.UnixMilli()); err != nil {
		return fmt.Errorf("queue: defer callback lane %s/%s: %w", lane.Namespace, lane.Queue, err)
	}
	return nil
}

// SweepCallbackLanes is one step of the sweep that indexes the lanes of the queues that have had
// callback jobs, for work stored by a version of Sluice that did not keep the index: it marks one
// page of about count of them due now (each is then visited once, and its visit sets its entry
// right) and returns the cursor of the next page, 0 once the sweep is complete (start with 0). A
// step from cursor 0 does nothing while a sweep completed within the last every.
func (c *Client) SweepCallbackLanes(ctx context.Context, cursor uint64, count int, every time.Duration) (next uint64, marked int, err error) {
	next, marked, err = c.store.SweepLanes(ctx, cursor, int64(max(count, 1)), every)
	if err != nil {
		return next, marked, fmt.Errorf("queue: sweep callback lanes: %w", err)
	}
	return next, marked, nil
}
