package waitroom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/duework"
)

// MaintainResult counts what one pass did.
type MaintainResult struct {
	Rooms     int // rooms visited: those with something due, and those the sweep visited
	Freed     int // idle slots freed
	Abandoned int // silent visitors removed from lines
	Failed    int // rooms whose housekeeping failed (tried again after a backoff)
	Swept     int // rooms of the rooms set visited to index them (duework.Sweep)
}

// maintainRooms is the most rooms a pass takes from each shard of the due index and from the
// sweep of the rooms set; what is left waits for the next pass.
const maintainRooms = 1000

// sweepEvery is how long a completed sweep of the rooms set lasts (dueSweptKey): then it is
// swept again, a page a pass, which indexes what a version of Sluice that did not keep the due
// index stored meanwhile.
const sweepEvery = time.Hour

// maintenance is what a Client's maintenance passes carry from one to the next.
type maintenance struct {
	backoff duework.Backoff[string] // rooms whose housekeeping failed in a row
	sweep   duework.Sweep           // of the rooms set
}

// MaintainOnce runs one housekeeping step on each room with something due, as the due index says
// (the scripts that admit or queue visitors record it there in the same call); idle rooms are not
// visited. Until the rooms set has been swept lately it also visits a page of it, which indexes
// rooms stored by an older version. A room whose housekeeping fails does not stop the others: it
// is tried again after a backoff (1 s doubling to 1 min), and the error names it. A room listed
// without settings (a delete that stopped half way) is taken off the list.
func (c *Client) MaintainOnce(ctx context.Context) (MaintainResult, error) {
	var res MaintainResult
	now, due, err := duework.Due(ctx, c.rdb, dueBase(c.cfg.Prefix), c.cluster, maintainRooms)
	if err != nil {
		return res, fmt.Errorf("waitroom: maintain: %w", err)
	}
	swept, err := c.maint.sweep.Page(ctx, c.rdb, c.scripts, duework.Registry{
		Scan: func(ctx context.Context, cursor uint64) ([]string, uint64, error) {
			return c.rdb.SScan(ctx, roomsKey(c.cfg.Prefix), cursor, "", maintainRooms).Result()
		},
		Mark: dueSweptKey(c.cfg.Prefix), Every: sweepEvery,
		Base: dueBase(c.cfg.Prefix), Cluster: c.cluster,
		KeyOf: func(name string) string { return newRoomKeys(c.cfg.Prefix, name, false).config() },
	})
	if err != nil {
		return res, fmt.Errorf("waitroom: sweep the rooms: %w", err)
	}
	res.Swept = len(swept)
	var errs []error
	for _, name := range duework.Union(due, swept) {
		r, err := c.Room(name)
		if err != nil {
			continue // not a name SetRoom writes
		}
		freed, abandoned, err := r.maintain(ctx)
		switch {
		case errors.Is(err, ErrRoomNotFound):
			if err := c.rdb.SRem(ctx, roomsKey(c.cfg.Prefix), name).Err(); err != nil {
				errs = append(errs, err)
			}
			continue
		case err != nil:
			res.Failed++
			_, err = c.maint.backoff.Fail(ctx, c.rdb, name, r.keys.due(), name, now, err)
			errs = append(errs, err)
			continue
		}
		c.maint.backoff.Succeeded(name)
		res.Rooms++
		res.Freed += freed
		res.Abandoned += abandoned
	}
	return res, errors.Join(errs...)
}
