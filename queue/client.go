package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// Client is the job queue engine on one Redis. It is safe for concurrent use; create one per
// process and Close it when done (it holds a Pub/Sub connection while consumers block).
type Client struct {
	rdb     redis.UniversalClient
	cfg     Config
	scripts *queueScripts
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

	loadMu sync.Mutex
	loaded bool
	mode   atomic.Int32 // modeUnknown until loadOnce decides: modeFunctions or modeEvals
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
		rdb:        rdb,
		cfg:        cfg,
		scripts:    loadScripts(),
		registered: make(map[queueName]time.Time),
		keys:       newKeyCache(cfg.Prefix),
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
// Queues find it. It runs before the job is written: a crash in between leaves an empty queue
// registered, never a job in an unregistered queue.
func (c *Client) register(ctx context.Context, ns, q string) error {
	key := queueName{ns, q}
	c.registeredMu.Lock()
	last, ok := c.registered[key]
	c.registeredMu.Unlock()
	if ok && time.Since(last) < registerEvery {
		return nil
	}
	pipe := c.rdb.Pipeline()
	pipe.SAdd(ctx, namespacesKey(c.cfg.Prefix), ns)
	pipe.SAdd(ctx, queuesKey(c.cfg.Prefix, ns), q)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("queue: register %s/%s: %w", ns, q, err)
	}
	c.registeredMu.Lock()
	c.registered[key] = time.Now()
	c.registeredMu.Unlock()
	return nil
}

func (c *Client) forget(ns, q string) {
	c.registeredMu.Lock()
	delete(c.registered, queueName{ns, q})
	c.registeredMu.Unlock()
}

// loadOnce decides how scripts run and loads them into every master: the function library where
// the store has FUNCTION, else the EVALSHA scripts (pipelines need them loaded: go-redis does not
// fall back to EVAL on NOSCRIPT there).
func (c *Client) loadOnce(ctx context.Context) error {
	return c.load(ctx, false)
}

// load is loadOnce; replace loads the library even over one of the same name (after Redis said a
// function of it was missing, the library there is not this one).
func (c *Client) load(ctx context.Context, replace bool) error {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if c.loaded {
		return nil
	}
	functions, err := c.loadLibrary(ctx, replace)
	var reply redis.Error
	switch {
	case err != nil && errors.As(err, &reply):
		// Redis refused the library (out of memory, a replica, loading, ...): run the scripts with
		// EVALSHA, which works in every state the calls themselves can run in, for this Client's
		// life rather than failing every pipeline and retrying the load on every call.
		c.cfg.Logger.Warn("queue: Redis refused the function library; scripts run with EVALSHA", slog.Any("error", err))
		functions = false
	case err != nil:
		return fmt.Errorf("queue: load function library: %w", err)
	}
	if functions {
		c.mode.Store(modeFunctions)
	} else {
		all := make([]*redis.Script, 0, len(c.scripts.evals))
		for _, s := range c.scripts.evals {
			all = append(all, s)
		}
		if err := redisx.LoadScripts(ctx, c.rdb, all...); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		c.mode.Store(modeEvals)
	}
	c.loaded = true
	return nil
}

// reload loads the scripts again after Redis reported one missing (restart without persistence,
// failover to a node that never had them, SCRIPT or FUNCTION FLUSH).
func (c *Client) reload(ctx context.Context) error {
	c.loadMu.Lock()
	c.loaded = false
	c.loadMu.Unlock()
	return c.load(ctx, true)
}

// execPipeline runs a pipeline of script calls; when Redis lost its scripts or library (restart,
// failover, SCRIPT or FUNCTION FLUSH) it reloads them and runs once more the calls that could not run.
// Every script either ran whole or not at all, and a missing script did not run; the others did
// (on a cluster one node can lose its cache alone), so they must not run twice.
func (c *Client) execPipeline(ctx context.Context, build func(redis.Pipeliner) []*redis.Cmd) ([]*redis.Cmd, error) {
	if err := c.loadOnce(ctx); err != nil {
		return nil, err
	}
	pipe := c.rdb.Pipeline()
	cmds := build(pipe)
	_, err := pipe.Exec(ctx)
	if anyMissingScript(cmds) {
		if err := c.reload(ctx); err != nil {
			return nil, err
		}
		again := c.rdb.Pipeline()
		fresh := build(again)
		again.Discard()
		for i, cmd := range cmds {
			if isMissingScript(cmd.Err()) {
				cmds[i] = fresh[i]
				_ = again.Process(ctx, fresh[i])
			}
		}
		_, err = again.Exec(ctx)
	}
	if err != nil && !errors.Is(err, redis.Nil) && !allReplied(cmds) {
		return nil, err
	}
	return cmds, nil
}

func anyMissingScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if isMissingScript(c.Err()) {
			return true
		}
	}
	return false
}

// allReplied reports whether every command got a reply (possibly an error reply of its own), as
// opposed to a connection failure that left some without one.
func allReplied(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			var re redis.Error
			if !errors.As(err, &re) {
				return false
			}
		}
	}
	return true
}
