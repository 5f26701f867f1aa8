package relay

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Client is the request queue's Go API: endpoints, and tasks that call them (Submit, Get, Wait,
// Cancel, Done), on any redis.UniversalClient (standalone, Sentinel or Cluster). It is safe for
// concurrent use; any number of Clients in any number of processes share the same queues. Tasks
// only run while some process runs a Dispatcher.
type Client struct {
	rdb redis.UniversalClient
	cfg Config

	keys keyCache
	reg  registryKeys
	ch   channels
	ids  idGen
	eps  endpointCache

	finishedMs, readMs int64
	archiving          int // 1 with an archive: finished tasks are remembered for it

	lastPrune atomic.Int64 // unix ns of the last archive prune
	submits   *combiner[submitReq, []int64]

	mode   atomic.Int32 // modeUnknown until load decides: modeFunctions or modeEvals
	loadMu sync.Mutex

	notifyOnce sync.Once
	notify     *notifier
}

// NewClient returns a Client on rdb. It does not talk to Redis until used.
func NewClient(rdb redis.UniversalClient, cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rdb == nil {
		return nil, fmt.Errorf("relay: NewClient: nil redis client")
	}
	c := &Client{
		rdb:        rdb,
		cfg:        cfg,
		keys:       keyCache{prefix: cfg.Prefix},
		reg:        newRegistryKeys(cfg.Prefix),
		ch:         newChannels(cfg.Prefix),
		finishedMs: ms(cfg.FinishedRetention),
		readMs:     ms(cfg.ReadRetention),
	}
	if cfg.Archive != nil {
		c.archiving = 1
	}
	c.submits = newCombiner(c.runSubmits)
	return c, nil
}

// notifier returns the Client's Pub/Sub notifier, made at first use.
func (c *Client) notifier() *notifier {
	c.notifyOnce.Do(func() { c.notify = newNotifier(c.rdb, c.cfg.Logger) })
	return c.notify
}

// Close ends the Client's Pub/Sub subscription (waking every Wait under way, which then returns
// ErrClosed). It does not close the redis client.
func (c *Client) Close() error {
	c.notifyOnce.Do(func() {}) // no notifier after Close
	if c.notify != nil {
		c.notify.close()
	}
	return nil
}

// watch registers for the notifications of channels. It fails with ErrClosed after Close.
func (c *Client) watch(ctx context.Context, fn func(payload string), channels ...string) (*waiter, error) {
	n := c.notifier()
	if n == nil {
		return nil, ErrClosed
	}
	return n.register(ctx, channels, fn)
}
