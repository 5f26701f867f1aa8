package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/queue/internal/store"
)

// Client is the job queue engine on one Redis. It is safe for concurrent use; create one per
// process and Close it when done (it holds a Pub/Sub connection while consumers block).
type Client struct {
	cfg    Config
	store  *store.Store // every read and change of Redis state (internal/store)
	ids    idGen
	notify *notifier
	tracer *tracing.Tracer // nil: tracing off

	// Concurrent single calls on one queue share script calls (combine.go).
	publishComb *combiner[publishReq, store.Published]
	leaseComb   *combiner[leaseReq, leaseRes] // acks and consumes (lease_batch.go)

	maint maintenance // what maintenance passes carry from one to the next (maintain_pass.go)
	usage *usageMeter // namespaces' measured storage, for StorageQuota (usage.go)
}

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
		cfg: cfg,
		store: store.New(rdb, store.Config{
			Prefix: cfg.Prefix, Batch: cfg.Batch,
			DeadRetention: cfg.DeadRetention, MaxDead: cfg.MaxDead,
			ResultRetention: cfg.ResultRetention, MaxResults: cfg.MaxResults,
			ReplicaAcks: cfg.ReplicaAcks, ReplicaAckTimeout: cfg.ReplicaAckTimeout,
			MaxConsumeBytes: int64(cfg.MaxConsumeBytes), Logger: cfg.Logger,
		}),
		notify: newNotifier(rdb, cfg.Logger),
		tracer: tracing.New(cfg.TracerProvider, cfg.TraceLinks),
	}
	c.usage = newUsageMeter(cfg.UsageRefresh, c.store.Usage)
	c.publishComb = newCombiner(c.runPublish)
	c.leaseComb = newCombiner(c.runLeaseBatch)
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

// HashTag is the Redis Cluster hash tag every key of the queue carries, "{<ns>:<queue>}". Data
// kept beside a queue under a key of its own (the dashboard's throughput samples) can carry it to
// sit in the queue's slot without spelling out how the queue names its keys.
func (c *Client) HashTag(ns, queue string) string { return store.HashTag(ns, queue) }

// register adds a queue to the registries before a job is written to it (store.Register).
func (c *Client) register(ctx context.Context, ns, q string, callbacks bool) error {
	var quota func() (int64, error)
	if c.cfg.QueueQuota != nil {
		quota = func() (int64, error) { return c.cfg.QueueQuota(ctx, ns) }
	}
	max, err := c.store.Register(ctx, ns, q, callbacks, quota)
	switch {
	case errors.Is(err, store.ErrQueueQuota):
		return &sluice.QuotaError{Namespace: ns, Quota: "max_queues", Limit: max}
	case err != nil:
		return fmt.Errorf("queue: register %s/%s: %w", ns, q, err)
	}
	return nil
}
