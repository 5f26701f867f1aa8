package callback

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
)

// DelivererConfig configures a Deliverer. Queue and Redis are required; every other field's
// comment states its default.
type DelivererConfig struct {
	// Queue is the job queue whose callback jobs are delivered. Required.
	Queue *queue.Client
	// Redis is the Redis of Queue: the deliverer subscribes to callback notifications on it and
	// reads namespaces' callback settings from it (under Queue's prefix). Required.
	Redis redis.UniversalClient

	// Workers is the number of calls in flight at once, and of callback jobs leased at once (a
	// job is leased only when a worker is free for it, so deliverers sharing a Redis share the
	// work instead of hoarding leases). Default 32.
	Workers int

	// AllowPrivate lets every namespace's callbacks reach loopback, private and other
	// special-purpose addresses. Default false: only namespaces whose settings allow it may, and
	// the check is made on the address dialled (a name resolving to 127.0.0.1 is refused too).
	AllowPrivate bool

	// MaxResultBytes bounds how much of a response is read and kept as the job's result. Default
	// 64 KiB.
	MaxResultBytes int64

	// Relay, when set, is the request queue (a *relay.Client) whose endpoints protect the services
	// callbacks may call: a callback whose URL is under an endpoint's target URL (the longest one
	// when several are) takes one of that endpoint's slots (relay.Client.AcquireSlot) for its
	// call, so it counts against the endpoint's QPS and Concurrency together with the endpoint's
	// tasks, and the service never sees more than the endpoint allows. The per-destination limits
	// below then do not apply to it. Default nil: only the per-destination limits apply.
	Relay EndpointSlots

	// DestinationConcurrency caps the calls in flight to one destination (scheme, host and port)
	// across every deliverer on the Redis, for callbacks under no endpoint of Relay. Default 0: no
	// cap beyond Workers. A job waits for the destination's limits (or its endpoint's) at most as
	// long as its lease leaves beyond the call (TTR - timeout, 5s by default); then it is given
	// back, without using a try, and leased again.
	DestinationConcurrency int
	// DestinationRate caps the calls started per second to one destination across every
	// deliverer, for callbacks under no endpoint of Relay. Default 0: no cap.
	DestinationRate int

	// SettingsTTL is how long a namespace's callback settings are cached; a change made with
	// Store applies within about this long. Default 1s.
	SettingsTTL time.Duration

	// PollInterval is how often the deliverer reads the callback lanes' due index for lanes with
	// work due that no notification named (one lost while the subscription reconnected, a job of
	// a lane it did not visit coming due). Reads are at least ten times as long apart as the last
	// one took (a Cluster's index has a shard per hash slot), so polling never takes more than a
	// tenth of the time. Default 500ms.
	PollInterval time.Duration
	// Batch is the most lanes one read of the due index takes from each of its shards (one on a
	// standalone server, one per hash slot on a Cluster); what is left waits for the next read.
	// It also sizes a step of the sweep of the callback registry. Default 1000.
	Batch int
	// SweepEvery is how often the registry of callback queues is swept to index the lanes the due
	// index may lack (callback jobs stored by a version of Sluice that did not keep it): each
	// registered lane is marked due once, Batch a read, and visited once. Default 1h.
	SweepEvery time.Duration

	// ShutdownTimeout is how long Stop lets calls in flight finish before it cancels them (a
	// cancelled call is retried later, with the same webhook-id). Default 10s.
	ShutdownTimeout time.Duration

	// TLSConfig is used for https destinations. Default nil: system roots.
	TLSConfig *tls.Config

	// UserAgent is sent unless the callback sets one. Default "sluice-callbacks".
	UserAgent string

	// OnDelivery, when set, is called after every try with its outcome (for metrics). It runs on
	// the worker: keep it fast. Default nil.
	OnDelivery func(Event)

	// Logger receives the deliverer's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c DelivererConfig) withDefaults() DelivererConfig {
	c.Workers = cmp.Or(c.Workers, 32)
	c.MaxResultBytes = cmp.Or(c.MaxResultBytes, 64<<10)
	c.SettingsTTL = cmp.Or(c.SettingsTTL, time.Second)
	c.PollInterval = cmp.Or(c.PollInterval, 500*time.Millisecond)
	c.Batch = cmp.Or(c.Batch, 1000)
	c.SweepEvery = cmp.Or(c.SweepEvery, time.Hour)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, 10*time.Second)
	c.UserAgent = cmp.Or(c.UserAgent, "sluice-callbacks")
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c DelivererConfig) validate() error {
	var errs []error
	if c.Queue == nil {
		errs = append(errs, errors.New("callback: DelivererConfig.Queue is required"))
	}
	if c.Redis == nil {
		errs = append(errs, errors.New("callback: DelivererConfig.Redis is required"))
	}
	checks := []struct {
		name string
		bad  bool
	}{
		{"Workers", c.Workers < 1 || c.Workers > queue.MaxConsumeCount},
		{"MaxResultBytes", c.MaxResultBytes < 1},
		{"DestinationConcurrency", c.DestinationConcurrency < 0},
		{"DestinationRate", c.DestinationRate < 0},
		{"SettingsTTL", c.SettingsTTL < time.Millisecond},
		{"PollInterval", c.PollInterval < time.Millisecond},
		{"Batch", c.Batch < 1},
		{"SweepEvery", c.SweepEvery < time.Second},
		{"ShutdownTimeout", c.ShutdownTimeout < time.Millisecond},
	}
	for _, ch := range checks {
		if ch.bad {
			errs = append(errs, fmt.Errorf("callback: DelivererConfig.%s is out of range", ch.name))
		}
	}
	return errors.Join(errs...)
}
