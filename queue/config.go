package queue

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Config configures a Client. The zero value is usable: every field has a default.
type Config struct {
	// Prefix starts every key the queue writes, so tenants and tests can share one Redis.
	// Default "sluice".
	Prefix string

	// DefaultTries is the number of deliveries a job gets when PublishParams.Tries is 0. Default 3.
	DefaultTries int

	// DefaultTTR is the lease a consumer gets when neither the job nor the consume call names one.
	// Default 30s.
	DefaultTTR time.Duration

	// DefaultUniqueFor is how long a unique key is held when PublishParams.UniqueFor is 0, and when
	// DeadRespawn gives a job its key back (it is released earlier when its job finishes).
	// Default 24h.
	DefaultUniqueFor time.Duration

	// MaxPayloadBytes bounds a job's payload. Default 8 MiB.
	MaxPayloadBytes int

	// MaxConsumeBytes bounds one Consume answer: the jobs it leases carry at most this many bytes
	// of records (payloads, attributes and fields), so fewer jobs than Count come back when they
	// are large; a job over the bound alone is still delivered, alone. The bound is applied inside
	// the script as it pops, so no job is leased that the answer does not carry, and it bounds how
	// long one consume holds Redis. Default 4 MiB.
	MaxConsumeBytes int

	// ResultRetention is how long an acked job's result stays readable with Get. Default 24h.
	ResultRetention time.Duration

	// MaxResults bounds the results kept per queue; the oldest go first. Default 100,000.
	MaxResults int

	// DeadRetention is how long a job stays in the dead letter. Default 7 days.
	DeadRetention time.Duration

	// MaxDead bounds the dead letter of each queue; the oldest jobs go first. Default 100,000.
	MaxDead int

	// Batch is the most jobs one housekeeping step moves inside one script call (due jobs, expired
	// leases, expired jobs), which bounds how long a script can block Redis. Default 1,000.
	Batch int

	// WakeupInterval is the longest a blocked Consume sleeps without re-checking Redis; each sleep
	// is drawn between three quarters of it and all of it, so waiters that started together do
	// not re-check together. Consumers are woken by notifications (published jobs, and the
	// subscription coming back after a lost connection) and by timers (due jobs, lease ends), so
	// this is only a last resort, and idle waiting costs Redis next to nothing: 3,000 waiters
	// re-check about 86 times a second at the default. Default 40s.
	WakeupInterval time.Duration

	// ReplicaAcks is how many replicas must acknowledge a publish before it returns (Redis WAIT on
	// the connection that wrote the job). With 1 and one replica, a job whose publish returned
	// survives the primary's death followed by a Sentinel failover. Fewer acknowledgements within
	// ReplicaAckTimeout make the publish fail with ErrNotReplicated (the job was written to the
	// primary). Default 0: a publish returns as soon as the primary has the job, and a failover can
	// lose the last jobs written (docs/reliability.md).
	ReplicaAcks int

	// ReplicaAckTimeout bounds the wait for ReplicaAcks. Default 1s.
	ReplicaAckTimeout time.Duration

	// Logger receives the client's logs. Default slog.Default().
	Logger *slog.Logger

	// TracerProvider, when set, traces the client's work with OpenTelemetry (docs/tracing.md): a
	// PRODUCER span per publish whose W3C trace context is stored with the job (attributes
	// traceparent and tracestate), and a CONSUMER span per delivery a worker runs. Pass
	// otel.GetTracerProvider() to use the global one. Default nil: no spans, and nothing is added
	// to a job.
	TracerProvider trace.TracerProvider

	// TraceLinks makes each delivery's span the root of a new trace that links to the producer's
	// span, instead of its child (one trace per attempt, rather than the publish and all its
	// attempts in one trace). Default false: child.
	TraceLinks bool

	// QueueQuota, when set, returns the most queues namespace ns may have (0: no limit): a publish
	// or pause that would add one more queue to a namespace holding that many is refused with a
	// *sluice.QuotaError (quota max_queues), and nothing is written. The check and the
	// registration are one script. Default nil: no limit. The server sets it from its namespaces'
	// quotas.
	QueueQuota QuotaFunc

	// ScheduleQuota, when set, returns the most schedules namespace ns may have (0: no limit):
	// setting a new schedule in a namespace holding that many is refused with a
	// *sluice.QuotaError (quota max_schedules), and nothing is stored; replacing one is not
	// refused. The check and the naming of the schedule in the namespace's index are one script.
	// Default nil: no limit. The server sets it from its namespaces' quotas.
	ScheduleQuota QuotaFunc

	// StorageQuota, when set, returns the most jobs and bytes namespace ns may store (0: no
	// limit): a publish that would take the namespace past either is refused with a
	// *sluice.QuotaError (max_stored_jobs or max_stored_bytes), and nothing is written. The check
	// reads the namespace's usage as measured at most UsageRefresh ago (Client.Usage) plus what
	// this client published since, not a counter kept by the write: a namespace may pass its
	// quota by what other clients publish to it within one UsageRefresh. Default nil: no limit.
	// The server sets it from its namespaces' quotas.
	StorageQuota StorageQuotaFunc

	// UsageRefresh is how often a namespace's storage usage is measured again while it publishes
	// under a storage quota (a measure costs two O(1) commands per queue of the namespace, and
	// the next one waits at least ten times as long as the last one took). Default 1s.
	UsageRefresh time.Duration
}

// withDefaults returns a copy of c with every zero field set to its default.
func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sluice")
	c.DefaultTries = cmp.Or(c.DefaultTries, 3)
	c.DefaultTTR = cmp.Or(c.DefaultTTR, 30*time.Second)
	c.DefaultUniqueFor = cmp.Or(c.DefaultUniqueFor, 24*time.Hour)
	c.MaxPayloadBytes = cmp.Or(c.MaxPayloadBytes, 8<<20)
	c.MaxConsumeBytes = cmp.Or(c.MaxConsumeBytes, 4<<20)
	c.ResultRetention = cmp.Or(c.ResultRetention, 24*time.Hour)
	c.MaxResults = cmp.Or(c.MaxResults, 100_000)
	c.DeadRetention = cmp.Or(c.DeadRetention, 7*24*time.Hour)
	c.MaxDead = cmp.Or(c.MaxDead, 100_000)
	c.UsageRefresh = cmp.Or(c.UsageRefresh, time.Second)
	c.Batch = cmp.Or(c.Batch, 1000)
	c.WakeupInterval = cmp.Or(c.WakeupInterval, 40*time.Second)
	c.ReplicaAckTimeout = cmp.Or(c.ReplicaAckTimeout, time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if !validName(c.Prefix) {
		errs = append(errs, fmt.Errorf("config: Prefix %q: %s", c.Prefix, nameRule))
	}
	positive := []struct {
		name string
		v    int64
	}{
		{"DefaultTries", int64(c.DefaultTries)},
		{"DefaultTTR", int64(c.DefaultTTR / time.Millisecond)},
		{"DefaultUniqueFor", int64(c.DefaultUniqueFor / time.Millisecond)},
		{"MaxPayloadBytes", int64(c.MaxPayloadBytes)},
		{"MaxConsumeBytes", int64(c.MaxConsumeBytes)},
		{"ResultRetention", int64(c.ResultRetention / time.Millisecond)},
		{"MaxResults", int64(c.MaxResults)},
		{"DeadRetention", int64(c.DeadRetention / time.Millisecond)},
		{"MaxDead", int64(c.MaxDead)},
		{"Batch", int64(c.Batch)},
		{"WakeupInterval", int64(c.WakeupInterval / time.Millisecond)},
		{"ReplicaAckTimeout", int64(c.ReplicaAckTimeout / time.Millisecond)},
	}
	if c.ReplicaAcks < 0 {
		errs = append(errs, errors.New("config: ReplicaAcks must not be negative"))
	}
	for _, f := range positive {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("config: %s must be positive (durations at least 1ms)", f.name))
		}
	}
	return errors.Join(errs...)
}
