package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/combine"
	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/notify"
	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/tracing"
)

// Client is the request queue's Go API: endpoints, and tasks that call them (Submit, Get, Wait,
// Cancel, Done), on any redis.UniversalClient (standalone, Sentinel or Cluster). It is safe for
// concurrent use; any number of Clients in any number of processes share the same queues. Tasks
// only run while some process runs a Dispatcher.
type Client struct {
	rdb redis.UniversalClient
	cfg Config
	// tracer traces submits and calls (nil: tracing off).
	tracer *tracing.Tracer

	keys    keyCache
	reg     registryKeys
	ch      channels
	ids     idGen
	eps     endpointCache
	changes settingsWatch // endpoint changes pushed by other Clients (endpoint_watch.go)

	finishedMs, readMs int64
	archiving          int // 1 with an archive: finished tasks are remembered for it

	lastPrune atomic.Int64 // unix ns of the last archive prune
	submits   *combine.Combiner[submitReq, submitReply]
	slotTakes *combine.Combiner[slotReq, [2]int64]
	slotFrees *combine.Combiner[string, int64]

	scripts *redisx.ScriptRunner // runs relay's scripts on rdb (scripts.go)
	maint   maintenance          // what maintenance passes carry from one to the next (maintain.go)

	notifyOnce sync.Once
	notify     *notify.Notifier
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
		tracer:     tracing.New(cfg.TracerProvider, cfg.TraceLinks),
		rdb:        rdb,
		cfg:        cfg,
		keys:       keyCache{prefix: cfg.Prefix, cluster: duework.IsCluster(rdb)},
		reg:        newRegistryKeys(cfg.Prefix),
		ch:         newChannels(cfg.Prefix),
		finishedMs: ms(cfg.FinishedRetention),
		readMs:     ms(cfg.ReadRetention),
		scripts:    redisx.NewScriptRunner(library, rdb, cfg.Logger, "relay"),
		changes:    settingsWatch{id: newClientID()},
	}
	if cfg.Archive != nil {
		c.archiving = 1
	}
	c.submits = combine.New(c.runSubmits)
	c.slotTakes = combine.New(c.runSlotTakes)
	c.slotFrees = combine.New(c.runSlotFrees)
	return c, nil
}

// notifier returns the Client's Pub/Sub notifier, made at first use. A channel is unsubscribed
// as soon as its last waiter leaves: task channels are waited on once.
func (c *Client) notifier() *notify.Notifier {
	c.notifyOnce.Do(func() { c.notify = notify.New(c.rdb, notify.Config{Name: "relay", Logger: c.cfg.Logger}) })
	return c.notify
}

// Close ends the Client's Pub/Sub subscriptions (waking every Wait under way, which then returns
// ErrClosed). It does not close the redis client.
func (c *Client) Close() error {
	c.notifyOnce.Do(func() {}) // no notifier after Close
	if c.notify != nil {
		c.notify.Close()
	}
	c.closeWatch()
	return nil
}

// watch registers for the notifications of channels. It fails with ErrClosed after Close.
func (c *Client) watch(ctx context.Context, fn func(payload string), channels ...string) (*notify.Waiter, error) {
	n := c.notifier()
	if n == nil {
		return nil, ErrClosed
	}
	w, err := n.Register(ctx, channels, fn)
	if errors.Is(err, notify.ErrClosed) {
		return nil, ErrClosed
	}
	return w, err
}
