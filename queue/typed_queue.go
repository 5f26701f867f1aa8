package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"
)

// QueueConfig configures a Queue. The zero value is usable: every field has a default.
type QueueConfig struct {
	// Codec encodes payloads. Default JSONCodec.
	Codec Codec

	// Tries is the number of deliveries a produced job gets when no WithTries option names one.
	// Default: the client's Config.DefaultTries (3).
	Tries int

	// TTR is the lease a worker gets on a job when ConsumeConfig.TTR names none; workers extend
	// it while the handler runs, so it bounds how long a crashed worker's job waits before another
	// worker runs it, not how long a handler may take. Default: the client's Config.DefaultTTR (30s).
	TTR time.Duration

	// Logger receives the queue's and its workers' logs. Default: the client's logger.
	Logger *slog.Logger
}

func (c QueueConfig) withDefaults(client *Client) QueueConfig {
	if c.Codec == nil {
		c.Codec = JSONCodec{}
	}
	if c.Tries == 0 {
		c.Tries = client.cfg.DefaultTries
	}
	if c.TTR == 0 {
		c.TTR = client.cfg.DefaultTTR
	}
	if c.Logger == nil {
		c.Logger = client.cfg.Logger
	}
	return c
}

func (c QueueConfig) validate() error {
	var errs []error
	if c.Tries < 1 {
		errs = append(errs, errors.New("queue config: Tries must be at least 1"))
	}
	if c.TTR < time.Millisecond {
		errs = append(errs, errors.New("queue config: TTR must be at least 1ms"))
	}
	return errors.Join(errs...)
}

// Queue is a typed view of one queue: producers Produce values of T, workers Consume them with a
// handler of *T. It is safe for concurrent use; any number of goroutines and processes may produce
// to and consume from the same queue.
type Queue[T any] struct {
	client *Client
	ns     string
	name   string
	cfg    QueueConfig
	stats  workerCounters
}

// NewQueue returns the queue name of namespace ns, carrying payloads of type T.
func NewQueue[T any](client *Client, ns, name string, cfg QueueConfig) (*Queue[T], error) {
	if client == nil {
		return nil, errors.New("queue: nil client")
	}
	if err := validateQueue(ns, name); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults(client)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Queue[T]{client: client, ns: ns, name: name, cfg: cfg}, nil
}

// Namespace returns the queue's namespace.
func (q *Queue[T]) Namespace() string { return q.ns }

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.name }

// Client returns the engine client the queue runs on.
func (q *Queue[T]) Client() *Client { return q.client }

// ProduceOption sets a property of a produced job.
type ProduceOption func(*PublishParams)

// WithPriority sets the job's priority, 0..255; higher runs first. Default 0.
func WithPriority(p int) ProduceOption { return func(pp *PublishParams) { pp.Priority = p } }

// WithRunAt makes the job due at t instead of after the delay given to Produce (which must be 0).
func WithRunAt(t time.Time) ProduceOption { return func(pp *PublishParams) { pp.RunAt = t } }

// WithUniqueKey deduplicates: while a job holding key is pending and for at most uniqueFor (0: the
// client's Config.DefaultUniqueFor), producing the key again returns the pending job's id and adds
// nothing.
func WithUniqueKey(key string, uniqueFor time.Duration) ProduceOption {
	return func(pp *PublishParams) { pp.UniqueKey, pp.UniqueFor = key, uniqueFor }
}

// WithTries sets the most deliveries the job gets. Default QueueConfig.Tries.
func WithTries(n int) ProduceOption { return func(pp *PublishParams) { pp.Tries = n } }

// WithTTL bounds how long the job may wait for delivery before it expires. Default: no limit.
func WithTTL(d time.Duration) ProduceOption { return func(pp *PublishParams) { pp.TTL = d } }

// WithTTR sets the job's lease length. Default QueueConfig.TTR.
func WithTTR(d time.Duration) ProduceOption { return func(pp *PublishParams) { pp.TTR = d } }

// WithAttributes attaches small string metadata, delivered with the job (Delivery.Attributes).
func WithAttributes(attrs map[string]string) ProduceOption {
	return func(pp *PublishParams) {
		if pp.Attributes == nil {
			pp.Attributes = make(map[string]string, len(attrs))
		}
		maps.Copy(pp.Attributes, attrs)
	}
}

// Produce adds a job carrying payload, due after delay (0: now), and returns its id. With
// WithUniqueKey a key already held returns the holder's id.
//
// It costs one round trip; concurrent calls on one queue share script calls (Client.Publish).
func (q *Queue[T]) Produce(ctx context.Context, payload *T, delay time.Duration, opts ...ProduceOption) (string, error) {
	p, err := q.params(payload, delay, opts)
	if err != nil {
		return "", err
	}
	res, err := q.client.Publish(ctx, p)
	if err != nil {
		return "", err
	}
	return res.ID, nil
}

// ProduceMany adds one job per payload, all with the same delay and options, in one round trip,
// and returns their ids in order. One payload that fails to encode or validate adds nothing.
func (q *Queue[T]) ProduceMany(ctx context.Context, payloads []*T, delay time.Duration, opts ...ProduceOption) ([]string, error) {
	ps := make([]PublishParams, len(payloads))
	for i, payload := range payloads {
		p, err := q.params(payload, delay, opts)
		if err != nil {
			return nil, inField(fmt.Sprintf("jobs[%d]", i), err)
		}
		ps[i] = p
	}
	res, err := q.client.PublishMany(ctx, ps)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids, nil
}

func (q *Queue[T]) params(payload *T, delay time.Duration, opts []ProduceOption) (PublishParams, error) {
	if payload == nil {
		return PublishParams{}, invalid("payload", "must not be nil")
	}
	b, err := q.cfg.Codec.Marshal(payload)
	if err != nil {
		return PublishParams{}, invalid("payload", "encode: %v", err)
	}
	p := PublishParams{
		Namespace: q.ns,
		Queue:     q.name,
		Payload:   b,
		Delay:     delay,
		Tries:     q.cfg.Tries,
		TTR:       q.cfg.TTR,
	}
	for _, o := range opts {
		o(&p)
	}
	return p, nil
}

// Stats returns the queue's depths and counters in Redis (every producer and worker of the queue
// counts). For this process's workers see WorkerStats.
func (q *Queue[T]) Stats(ctx context.Context) (Stats, error) {
	return q.client.Stats(ctx, q.ns, q.name)
}

// Decode turns a job's payload into a *T with the queue's codec, for code that reads jobs
// outside a worker (Client.Get, Client.Pending, tests).
func (q *Queue[T]) Decode(b []byte) (*T, error) { return q.decode(b) }

// decode turns a job's payload into a *T.
func (q *Queue[T]) decode(b []byte) (*T, error) {
	v := new(T)
	if err := q.cfg.Codec.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return v, nil
}
