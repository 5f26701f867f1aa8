package relay

import (
	"context"
	"errors"
	"fmt"
)

// MaintainResult counts what one maintenance pass did.
type MaintainResult struct {
	Endpoints int // endpoints visited (deleted ones still holding tasks included)
	Reaped    int // expired leases (retried or failed) and expired permits
	TimedOut  int // tasks that waited past their queue deadline
	Cancelled int // waiting tasks of deleted endpoints
	Archived  int // finished tasks written to the archive
}

// MaintainOnce runs one bounded housekeeping step on every endpoint, deleted ones included until
// they hold no task. Every Dispatcher runs it; any number of processes may, as each step is one
// atomic script.
func (c *Client) MaintainOnce(ctx context.Context) (MaintainResult, error) {
	var res MaintainResult
	snap, err := c.endpoints(ctx)
	if err != nil {
		return res, err
	}
	names, err := c.rdb.ZRange(ctx, c.reg.known, 0, -1).Result()
	if err != nil {
		return res, fmt.Errorf("relay: list endpoints to maintain: %w", err)
	}
	// One endpoint's failure (or the archive's) does not hold up the others: expired leases and
	// queue timeouts must be handled even while the archive database is down.
	var errs []error
	for _, name := range names {
		_, live := snap.byName[name]
		deleted := 0
		if !live {
			deleted = 1
		}
		r, err := c.run(ctx, scriptMaintain, name, c.cfg.MaintainBatch, deleted).Int64Slice()
		if err != nil {
			errs = append(errs, fmt.Errorf("relay: maintain %s: %w", name, err))
			continue
		}
		res.Endpoints++
		res.Reaped += int(r[0])
		res.TimedOut += int(r[1])
		res.Cancelled += int(r[2])
		n, err := c.archiveFinished(ctx, name)
		res.Archived += n
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !live && r[3] == 1 {
			if err := scriptEndpointForget.Run(ctx, c.rdb, []string{c.reg.settings, c.reg.known}, name).Err(); err != nil {
				errs = append(errs, fmt.Errorf("relay: forget %s: %w", name, err))
			}
		}
	}
	if err := c.pruneArchive(ctx); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}
