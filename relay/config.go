package relay

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Config configures a Client. The zero value is usable for offline tasks; online tasks need
// PermitKeys and priority grants need GrantKeys.
type Config struct {
	// Prefix starts every key and channel the relay writes, so tenants and tests can share one
	// Redis. Default "sluice".
	Prefix string

	// PendingRetention is the longest a task waits for its turn: an endpoint's QueueTimeout is
	// capped by it, and a task still waiting then ends as timeout. Default 3h.
	PendingRetention time.Duration

	// FinishedRetention is how long a finished task (completed, failed, cancelled, timeout) stays
	// in Redis. Default 1h.
	FinishedRetention time.Duration

	// ReadRetention is how long a finished task stays in Redis after its final status was first
	// read with Get or Wait (when that is sooner than FinishedRetention). Default 20s.
	ReadRetention time.Duration

	// RefreshInterval is how often a Client checks whether endpoint settings changed (one GET of
	// a version counter). Changes are pushed to every Client before SetEndpoint returns; this
	// bounds how long one the push missed (a Client reconnecting to Redis at that moment) goes
	// unseen. Default 250ms.
	RefreshInterval time.Duration

	// MaxBodyBytes bounds a task's request body. Default 1 MiB.
	MaxBodyBytes int

	// IdempotencyRetention is how long an idempotency key (SubmitParams.IdempotencyKey) keeps
	// answering with the task it first created: a resend within it creates nothing. Default 24h.
	IdempotencyRetention time.Duration

	// ArchiveBacklog bounds the finished tasks per endpoint remembered for the archive; the oldest
	// are dropped first. Default 100,000.
	ArchiveBacklog int

	// MaintainBatch is the most tasks one housekeeping step handles per endpoint (expired leases,
	// timed out tasks), which bounds how long a script can block Redis. Default 1,000.
	MaintainBatch int

	// LeaseMargin is added to an endpoint's Timeout to make the lease of an offline call: a
	// dispatcher that has not reported a call by then is taken for dead and the task is retried.
	// Default 10s.
	LeaseMargin time.Duration

	// PermitKeys sign and verify the permits of online tasks. The first key signs; every key
	// verifies, so a rotation adds the new key first, then drops the old one once its permits have
	// expired (keep two live keys). Each key at least 32 bytes. Default none: online tasks are
	// refused.
	PermitKeys [][]byte

	// GrantKeys verify priority grants (SignGrant), with the same rotation rule as PermitKeys.
	// Default none: grants are ignored and only SubmitParams.PriorityCap raises priority.
	GrantKeys [][]byte

	// Archive, when set, receives finished tasks (written in batches by MaintainOnce, so by
	// every Dispatcher, never on the read path) and answers Get for tasks no longer in Redis.
	// Its own retention (Archive.Prune) is enforced from the same passes, at most once a minute
	// per Client. Every Client that finishes tasks (those running Dispatchers, and those that
	// Cancel or Done) must be given the archive, since finished tasks are only remembered for it
	// by Clients that have one. relay/mysqlarchive opens one on MySQL or MariaDB. Default nil: no
	// archive.
	Archive Archive

	// Completions, when set, delivers the completion callbacks of tasks (SubmitParams.Callback):
	// it checks a callback at Submit, and receives ended tasks from maintenance (so from every
	// Dispatcher; a task's end marks its callback in the same script, so none is lost when a
	// process dies). Package callback's TaskCallbacks publishes them as signed callback jobs.
	// Every Client that submits tasks with callbacks, and those running Dispatchers, need it.
	// Default nil: a task with a callback is refused.
	Completions CompletionSink

	// Logger receives the client's logs. Default slog.Default().
	Logger *slog.Logger

	// TracerProvider, when set, traces tasks with OpenTelemetry (docs/tracing.md): a PRODUCER span
	// per submit, whose W3C trace context is stored as the task's traceparent header, and a CLIENT
	// span per call a Dispatcher makes, whose trace context the endpoint receives. Default nil: no
	// spans, and nothing is added to a task.
	TracerProvider trace.TracerProvider

	// TraceLinks makes each call's span the root of a new trace that links to the submit's span,
	// instead of its child. Default false: child.
	TraceLinks bool
}

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sluice")
	c.PendingRetention = cmp.Or(c.PendingRetention, 3*time.Hour)
	c.FinishedRetention = cmp.Or(c.FinishedRetention, time.Hour)
	c.ReadRetention = cmp.Or(c.ReadRetention, 20*time.Second)
	c.RefreshInterval = cmp.Or(c.RefreshInterval, 250*time.Millisecond)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, 1<<20)
	c.IdempotencyRetention = cmp.Or(c.IdempotencyRetention, 24*time.Hour)
	c.ArchiveBacklog = cmp.Or(c.ArchiveBacklog, 100_000)
	c.MaintainBatch = cmp.Or(c.MaintainBatch, 1000)
	c.LeaseMargin = cmp.Or(c.LeaseMargin, 10*time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if !validName(c.Prefix) {
		errs = append(errs, fmt.Errorf("relay config: Prefix %q: %s", c.Prefix, nameRule))
	}
	positive := []struct {
		name string
		v    int64
	}{
		{"PendingRetention", int64(c.PendingRetention / time.Millisecond)},
		{"FinishedRetention", int64(c.FinishedRetention / time.Millisecond)},
		{"ReadRetention", int64(c.ReadRetention / time.Millisecond)},
		{"RefreshInterval", int64(c.RefreshInterval / time.Millisecond)},
		{"MaxBodyBytes", int64(c.MaxBodyBytes)},
		{"IdempotencyRetention", int64(c.IdempotencyRetention / time.Millisecond)},
		{"ArchiveBacklog", int64(c.ArchiveBacklog)},
		{"MaintainBatch", int64(c.MaintainBatch)},
		{"LeaseMargin", int64(c.LeaseMargin / time.Millisecond)},
	}
	for _, f := range positive {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("relay config: %s must be positive (durations at least 1ms)", f.name))
		}
	}
	for i, k := range c.PermitKeys {
		if len(k) < 32 {
			errs = append(errs, fmt.Errorf("relay config: PermitKeys[%d] must be at least 32 bytes", i))
		}
	}
	for i, k := range c.GrantKeys {
		if len(k) < 32 {
			errs = append(errs, fmt.Errorf("relay config: GrantKeys[%d] must be at least 32 bytes", i))
		}
	}
	return errors.Join(errs...)
}
