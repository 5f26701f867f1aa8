package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// Client is the job queue engine on one Redis. It is safe for concurrent use; create one per
// process and Close it when done (it holds a Pub/Sub connection while consumers block).
type Client struct {
	rdb     redis.UniversalClient
	cfg     Config
	scripts *redisx.ScriptRunner // runs the queue's scripts on rdb (scripts.go)
	ids     idGen
	notify  *notifier
	keys    *keyCache
	// common are the ARGV every script gets after the queue's channel (lib.lua), made once.
	common []any

	// Concurrent single calls on one queue share script calls (combine.go).
	publishComb *combiner[publishReq, PublishResult]
	ackComb     *combiner[AckParams, error]
	consumeComb *combiner[consumeReq, consumeRes]

	registeredMu sync.Mutex
	registered   map[queueName]time.Time // when this process last registered a queue
	// registeredCallbacks is when this process last added a queue to the callback registry.
	registeredCallbacks map[queueName]time.Time
}

// registerEvery is how often a process re-adds a queue it publishes to to the registry, so a queue
// deleted while a producer runs comes back for the maintenance loop.
const registerEvery = time.Minute

// NewClient returns a Client on rdb (standalone, Sentinel or Cluster).
func NewClient(rdb redis.UniversalClient, cfg Config) (*Client, error) {
	if rdb == nil {
		return nil, errors.New("queue: nil redis client")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		rdb:                 rdb,
		cfg:                 cfg,
		scripts:             redisx.NewScriptRunner(library, rdb, cfg.Logger, "queue"),
		registered:          make(map[queueName]time.Time),
		registeredCallbacks: make(map[queueName]time.Time),
		keys:                newKeyCache(cfg.Prefix),
		common: []any{cfg.Batch, cfg.DeadRetention.Milliseconds(), cfg.MaxDead,
			cfg.ResultRetention.Milliseconds(), cfg.MaxResults},
	}
	c.notify = newNotifier(rdb, cfg.Logger)
	c.publishComb = newCombiner(c.runPublish)
	c.ackComb = newCombiner(c.runAck)
	c.consumeComb = newCombiner(c.runConsume)
	return c, nil
}

// Config returns the client's configuration with defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// Close releases the client's Pub/Sub connection and wakes blocked consumers, which return. It
// does not close the Redis client, which the caller owns.
func (c *Client) Close() error {
	c.notify.close()
	return nil
}

// register adds a queue to its namespace's registry before the first publish, so maintenance and
// Queues find it, and, for a publish with callback jobs, to the callback registry, so deliverers
// find it. It runs before the job is written: a crash in between leaves an empty queue
// registered, never a job in an unregistered queue.
func (c *Client) register(ctx context.Context, ns, q string, callbacks bool) error {
	key := queueName{ns, q}
	c.registeredMu.Lock()
	last, ok := c.registered[key]
	lastCb, okCb := c.registeredCallbacks[key]
	c.registeredMu.Unlock()
	needQueue := !ok || time.Since(last) >= registerEvery
	needCb := callbacks && (!okCb || time.Since(lastCb) >= registerEvery)
	if !needQueue && !needCb {
		return nil
	}
	pipe := c.rdb.Pipeline()
	pipe.SAdd(ctx, namespacesKey(c.cfg.Prefix), ns)
	pipe.SAdd(ctx, queuesKey(c.cfg.Prefix, ns), q)
	if callbacks {
		pipe.SAdd(ctx, callbackQueuesKey(c.cfg.Prefix), ns+":"+q)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("queue: register %s/%s: %w", ns, q, err)
	}
	now := time.Now()
	c.registeredMu.Lock()
	c.registered[key] = now
	if callbacks {
		c.registeredCallbacks[key] = now
	}
	c.registeredMu.Unlock()
	return nil
}

func (c *Client) forget(ns, q string) {
	c.registeredMu.Lock()
	delete(c.registered, queueName{ns, q})
	delete(c.registeredCallbacks, queueName{ns, q})
	c.registeredMu.Unlock()
}
