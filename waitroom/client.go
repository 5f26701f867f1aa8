package waitroom

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/redisx"
)

// ErrRoomNotFound is returned for a room that has no settings in Redis.
var ErrRoomNotFound = errors.New("waitroom: room not found")

// Client manages rooms in one Redis (standalone, Sentinel or Cluster) and hands out Room handles.
// Every instance of a service makes its own Client with the same Prefix and PassKeys; they share
// the rooms through Redis. It is safe for concurrent use.
type Client struct {
	rdb     redis.UniversalClient
	cfg     Config
	scripts *redisx.ScriptRunner
	signer  signer
	tokens  *tokenSigner       // nil: passes are HMAC passes
	calls   *callIDs           // the call ids of arrivals (arrive.lua: a poll charged once)
	page    *template.Template // the built-in waiting page

	mu    sync.Mutex
	rooms map[string]*Room

	cluster bool        // the due index has a shard per hash slot (duework.Key)
	maint   maintenance // what maintenance passes carry from one to the next (maintainer.go)

	downUntil atomic.Int64 // Unix ns until which Redis is not tried (after an error)
}

// NewClient returns a Client. It does not talk to Redis until the first call.
func NewClient(rdb redis.UniversalClient, cfg Config) (*Client, error) {
	if rdb == nil {
		return nil, errors.New("waitroom: NewClient: nil client")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Client{
		rdb:     rdb,
		cfg:     cfg,
		scripts: redisx.NewScriptRunner(library, rdb, cfg.Logger, "waitroom"),
		signer:  newSigner(cfg.PassKeys),
		tokens:  newTokenSigner(cfg.PassTokenKeys),
		calls:   newCallIDs(),
		page:    builtinPage(),
		rooms:   make(map[string]*Room),
		cluster: duework.IsCluster(rdb),
	}, nil
}

// Room returns the handle of the named room; the same one for every call with that name. The room
// need not exist yet: its calls return ErrRoomNotFound until SetRoom creates it.
func (c *Client) Room(name string) (*Room, error) {
	if !validName(name) {
		return nil, invalid("room", "name %q %s", name, nameRule)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rooms[name]
	if !ok {
		if len(c.rooms) >= maxRoomHandles {
			c.evictHandlesLocked()
		}
		r = newRoom(c, name)
		c.rooms[name] = r
	}
	return r, nil
}

// maxRoomHandles bounds the handles a Client keeps: the public routes make one for any room name
// a request names, and most such names may not exist.
const maxRoomHandles = 10_000

// evictHandlesLocked drops the handles of rooms never found in Redis (or deleted). A handle still
// held by a caller keeps working; the Client just forgets it.
func (c *Client) evictHandlesLocked() {
	for name, r := range c.rooms {
		if r.state.Load() == nil {
			delete(c.rooms, name)
		}
	}
}

// handles returns the rooms this process has handles for.
func (c *Client) handles() []*Room {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Room, 0, len(c.rooms))
	for _, r := range c.rooms {
		out = append(out, r)
	}
	return out
}

// SetRoom creates the room or replaces its settings. The change reaches every instance at once:
// the admission script reads max_active and the timeouts from Redis at every call.
func (c *Client) SetRoom(ctx context.Context, name string, cfg RoomConfig) (RoomConfig, error) {
	r, err := c.Room(name)
	if err != nil {
		return RoomConfig{}, err
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return RoomConfig{}, err
	}
	if _, err := c.configure(ctx, r, cfg, anyVersion, nil); err != nil {
		return RoomConfig{}, err
	}
	return cfg, nil
}

// GetRoom returns the room's settings, or ErrRoomNotFound.
func (c *Client) GetRoom(ctx context.Context, name string) (RoomConfig, error) {
	r, err := c.Room(name)
	if err != nil {
		return RoomConfig{}, err
	}
	st, err := r.load(ctx)
	if err != nil {
		return RoomConfig{}, err
	}
	return st.cfg, nil
}

// Rooms returns the names of every room, sorted.
func (c *Client) Rooms(ctx context.Context) ([]string, error) {
	names, err := c.rdb.SMembers(ctx, roomsKey(c.cfg.Prefix)).Result()
	if err != nil {
		return nil, fmt.Errorf("waitroom: list rooms: %w", err)
	}
	slices.Sort(names)
	return names, nil
}

// DeleteRoom removes the room, its visitors and its counters. Passes already issued stay valid
// until they expire (they are checked without Redis), but the room's pages answer not found.
func (c *Client) DeleteRoom(ctx context.Context, name string) error {
	r, err := c.Room(name)
	if err != nil {
		return err
	}
	// The room's keys go first, then its name from the list, both on a context the caller cannot
	// cancel half way: unlisted first and deleted never, a room kept admitting visitors that no
	// maintainer visited, and its silent visitors blocked the line for good. A name left listed
	// without settings is taken off the list by the next maintenance pass.
	ctx = context.WithoutCancel(ctx)
	existed, err := c.scripts.Run(ctx, scriptReset, r.keys, 1).Int()
	if err != nil {
		return fmt.Errorf("waitroom: delete room %s: %w", name, err)
	}
	r.forget()
	if err := c.rdb.SRem(ctx, roomsKey(c.cfg.Prefix), name).Err(); err != nil {
		return fmt.Errorf("waitroom: unlist room %s: %w", name, err)
	}
	if existed == 0 {
		return ErrRoomNotFound
	}
	return nil
}

// ResetRoom empties the room: every admitted and waiting visitor leaves and the counters start
// over; the settings stay.
func (c *Client) ResetRoom(ctx context.Context, name string) error {
	r, err := c.Room(name)
	if err != nil {
		return err
	}
	existed, err := c.scripts.Run(ctx, scriptReset, r.keys, 0).Int()
	if err != nil {
		return fmt.Errorf("waitroom: reset room %s: %w", name, err)
	}
	if existed == 0 {
		return ErrRoomNotFound
	}
	return nil
}

// redisRetry is how long the client decides without Redis after a Redis error, so a Redis outage
// costs each request nothing instead of a dial timeout.
const redisRetry = time.Second

func (c *Client) redisDown() bool { return time.Now().UnixNano() < c.downUntil.Load() }

func (c *Client) markDown() { c.downUntil.Store(time.Now().Add(redisRetry).UnixNano()) }

func (c *Client) markUp() {
	if c.downUntil.Load() != 0 {
		c.downUntil.Store(0)
	}
}
