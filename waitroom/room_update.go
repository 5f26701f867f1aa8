package waitroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/internal/duework"
)

// anyVersion makes configure write whatever version the room is at (SetRoom: replace).
const anyVersion = -1

// maxUpdateTries bounds UpdateRoom's read-change-write rounds: each lost round means another
// writer changed the room in between, so a few rounds are more than enough.
const maxUpdateTries = 16

// ErrUpdateConflict is returned by UpdateRoom when the room kept changing under it (every round
// lost to another writer).
var ErrUpdateConflict = errors.New("waitroom: the room's settings kept changing; try again")

// RoomUpdate is a room's settings as UpdateRoom reads them and its change function returns them.
type RoomUpdate struct {
	// Config is the room's settings (zero when Found is false).
	Config RoomConfig
	// Found says the room exists.
	Found bool
	// Applied is what a configuration source (the server's config file) last applied to the room,
	// opaque to this package and kept across SetRoom and every update that leaves it unchanged, so
	// that source can tell its own changes from live ones made since.
	Applied string
}

// UpdateRoom changes the room's settings by change, which gets them as they are in Redis and
// returns the new ones (creating the room when it is not Found). The write happens only if no
// other write reached the room between the read and the write; otherwise the room is read again
// and change called again, so a change of some fields never undoes another writer's change of
// the others. change may be called several times and must not have side effects; an error from it
// is returned as is and nothing is written.
func (c *Client) UpdateRoom(ctx context.Context, name string, change func(cur RoomUpdate) (RoomUpdate, error)) (RoomConfig, error) {
	r, err := c.Room(name)
	if err != nil {
		return RoomConfig{}, err
	}
	for range maxUpdateTries {
		h, err := c.rdb.HGetAll(ctx, r.keys.config()).Result()
		if err != nil {
			return RoomConfig{}, fmt.Errorf("waitroom: read room %s: %w", name, err)
		}
		cur := RoomUpdate{Found: len(h) > 0, Applied: h["applied"]}
		var version int64
		if cur.Found {
			cur.Config, version = parseRoomConfig(h)
		}
		next, err := change(cur)
		if err != nil {
			return RoomConfig{}, err
		}
		next.Config = next.Config.withDefaults()
		if err := next.Config.validate(); err != nil {
			return RoomConfig{}, err
		}
		var applied *string
		if next.Applied != cur.Applied {
			applied = &next.Applied
		}
		ok, err := c.configure(ctx, r, next.Config, version, applied)
		if err != nil {
			return RoomConfig{}, err
		}
		if ok {
			return next.Config, nil
		}
	}
	return RoomConfig{}, ErrUpdateConflict
}

// configure writes the room's settings when the room is at version expect (anyVersion: always),
// with its applied record replaced when applied is not nil, and reports whether it wrote.
func (c *Client) configure(ctx context.Context, r *Room, cfg RoomConfig, expect int64, applied *string) (bool, error) {
	// The list of rooms is in another Cluster slot than the room, so it cannot change in the
	// room's script. It is written before the settings, so a process killed between the two
	// leaves a listed room without settings (skipped, as any listed name without settings is),
	// never a room that works but is not listed and so never maintained; and again after them,
	// so a DeleteRoom that ran in between cannot leave the new settings unlisted. The room's hash
	// slot joins the due index's slots in use with it, before any visitor can make due work.
	list := func() error {
		pipe := c.rdb.Pipeline()
		pipe.SAdd(ctx, roomsKey(c.cfg.Prefix), r.name)
		_ = duework.Announce(ctx, pipe, dueBase(c.cfg.Prefix), c.cluster, r.keys.config())
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("waitroom: list room %s: %w", r.name, err)
		}
		return nil
	}
	if err := list(); err != nil {
		return false, err
	}
	record := ""
	if applied != nil {
		record = "=" + *applied
	}
	args := append([]any{strconv.FormatInt(expect, 10), record}, cfg.fields()...)
	version, err := c.scripts.Run(ctx, scriptConfigure, r.keys, args...).Int64()
	if err != nil {
		return false, fmt.Errorf("waitroom: set room %s: %w", r.name, err)
	}
	if version == 0 {
		return false, nil
	}
	if err := list(); err != nil {
		return false, err
	}
	r.store(cfg, version)
	return true, nil
}
