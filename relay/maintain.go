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
	// Completions counts the completion callbacks handed to Config.Completions.
	Completions int
}

// forgetGrace is how long after its deletion an endpoint is still maintained, in refresh
// intervals: a Client whose cached settings are older than the deletion (up to a RefreshInterval,
// more when refreshes fail) may still submit to it, and such tasks must be cancelled by
// maintenance rather than left waiting forever.
const forgetGrace = 20

// endpointLive reports whether the endpoint name exists: in snap, or else in Redis. A snapshot may
// lag a creation by Config.RefreshInterval (or longer when a refresh failed), and treating a new
// endpoint as deleted would cancel its first tasks.
func (c *Client) endpointLive(ctx context.Context, snap *endpointSnapshot, name string) (bool, error) {
	if _, ok := snap.byName[name]; ok {
		return true, nil
	}
	live, err := c.rdb.HExists(ctx, c.reg.settings, name).Result()
	if err != nil {
		return false, fmt.Errorf("relay: check endpoint %s: %w", name, err)
	}
	return live, nil
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
		live, err := c.endpointLive(ctx, snap, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
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
		if r[4] > 0 {
			n, err := c.forwardCompletions(ctx, name)
			res.Completions += n
			if err != nil {
				errs = append(errs, err)
			}
		}
		n, err := c.archiveFinished(ctx, name)
		res.Archived += n
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !live && r[3] == 1 {
			grace := (forgetGrace * c.cfg.RefreshInterval).Milliseconds()
			if err := c.scripts.Run(ctx, scriptEndpointForget, []string{c.reg.settings, c.reg.known}, name, grace).Err(); err != nil {
				errs = append(errs, fmt.Errorf("relay: forget %s: %w", name, err))
			}
		}
	}
	if err := c.pruneArchive(ctx); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}
