package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/queue/internal/store"
)

// Limits on what a job may carry.
const (
	MaxPriority       = 255
	MaxAttributes     = 32
	MaxAttributeKey   = 128
	MaxAttributeValue = 1024
	MaxUniqueKey      = 512
)

// PublishParams describe one job.
type PublishParams struct {
	Namespace string
	Queue     string
	Payload   []byte
	// Priority 0..255; higher runs first, FIFO within one priority. Default 0.
	Priority int
	// Delay postpones the first delivery; RunAt names the time instead (ms precision). At most one.
	Delay time.Duration
	RunAt time.Time
	// Tries is the most deliveries the job gets (≥ 1). 0: Config.DefaultTries.
	Tries int
	// TTL is how long the job may wait for delivery before it expires. 0: never.
	TTL time.Duration
	// TTR is the lease a consumer gets when the consume call names none. 0: Config.DefaultTTR.
	TTR time.Duration
	// Backoff is the retry delay after a failed delivery when the nack names none. Zero: at once.
	Backoff Backoff
	// UniqueKey deduplicates: while a job holding the key is pending (delayed, ready or leased) and
	// UniqueFor has not passed, publishing the key again returns that job's id as a duplicate.
	UniqueKey string
	UniqueFor time.Duration // 0: Config.DefaultUniqueFor
	// Attributes are small string metadata delivered with the job.
	Attributes map[string]string
	// Callback, when set, makes Sluice deliver the job to an HTTP URL when it is due instead of
	// handing it to a consumer (Callback). Its TTR must be longer than the callback's timeout.
	Callback *Callback
}

// PublishResult is the outcome of one publish.
type PublishResult struct {
	// ID of the new job, or of the job already holding the unique key.
	ID string
	// Duplicate reports that the unique key was held and nothing was published.
	Duplicate bool
}

// Publish adds one job. It costs one round trip (plus one the first time a process publishes to a
// queue, to register it); concurrent Publish calls to one queue share one script call.
func (c *Client) Publish(ctx context.Context, p PublishParams) (res PublishResult, err error) {
	ctx, span := c.startPublish(ctx, p.Namespace, p.Queue, 1)
	if span != nil {
		defer func() { tracing.End(span, err, tracing.MessageID.String(res.ID)) }()
		p.Attributes = withTraceContext(ctx, span, p.Attributes)
	}
	job, err := c.validateJob(p)
	if err != nil {
		return PublishResult{}, err
	}
	if err := c.checkStorage(ctx, p.Namespace, 1, storedBytes(p.Payload)); err != nil {
		return PublishResult{}, err
	}
	if err := c.register(ctx, p.Namespace, p.Queue, p.Callback != nil); err != nil {
		return PublishResult{}, err
	}
	published, err := c.publishComb.do(ctx, p.Namespace+"\x00"+p.Queue, publishReq{ns: p.Namespace, q: p.Queue, job: job})
	if err != nil {
		return PublishResult{}, publishError(err)
	}
	c.usage.add(p.Namespace, 1, storedBytes(p.Payload))
	return PublishResult(published), nil
}

// publishReq is one validated job and its queue.
type publishReq struct {
	ns, q string
	job   store.NewJob
}

// runPublish publishes a batch of jobs of one queue in one script call.
func (c *Client) runPublish(ctx context.Context, _ string, reqs []publishReq) ([]store.Published, error) {
	jobs := make([]*store.NewJob, len(reqs))
	for i := range reqs {
		jobs[i] = &reqs[i].job
	}
	return c.store.Publish(ctx, reqs[0].ns, reqs[0].q, jobs)
}

// publishError wraps a publish failure; one that too few replicas acknowledged is
// ErrNotReplicated.
func publishError(err error) error {
	var short *store.NotReplicatedError
	if errors.As(err, &short) {
		return fmt.Errorf("queue: publish: %w: %w", ErrNotReplicated, err)
	}
	return fmt.Errorf("queue: publish: %w", err)
}

// PublishMany adds jobs, one script call (one round trip) per queue, pipelined. Every job is
// validated first: one bad job publishes nothing and the error names it (jobs[3].priority).
// Results come in the order of ps.
func (c *Client) PublishMany(ctx context.Context, ps []PublishParams) (_ []PublishResult, err error) {
	if len(ps) == 0 {
		return nil, nil
	}
	ctx, span := c.startPublish(ctx, ps[0].Namespace, ps[0].Queue, len(ps))
	if span != nil {
		defer func() { tracing.End(span, err) }()
	}
	type group struct {
		store.QueueJobs
		idx       []int
		callbacks bool
		bytes     int64 // the jobs' storedBytes
	}
	var groups []*group
	byQueue := map[string]*group{}
	for i, p := range ps {
		p.Attributes = withTraceContext(ctx, span, p.Attributes)
		job, err := c.validateJob(p)
		if err != nil {
			return nil, inField(fmt.Sprintf("jobs[%d]", i), err)
		}
		key := p.Namespace + "\x00" + p.Queue
		g := byQueue[key]
		if g == nil {
			g = &group{QueueJobs: store.QueueJobs{Namespace: p.Namespace, Queue: p.Queue}}
			byQueue[key] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
		g.Jobs = append(g.Jobs, &job)
		g.callbacks = g.callbacks || p.Callback != nil
		g.bytes += storedBytes(p.Payload)
	}
	for _, g := range groups {
		if err := c.checkStorage(ctx, g.Namespace, int64(len(g.Jobs)), g.bytes); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err == nil {
			for _, g := range groups {
				c.usage.add(g.Namespace, int64(len(g.Jobs)), g.bytes)
			}
		}
	}()
	for _, g := range groups {
		if err := c.register(ctx, g.Namespace, g.Queue, g.callbacks); err != nil {
			return nil, err
		}
	}
	out := make([]PublishResult, len(ps))
	collect := func(g *group, res []store.Published) {
		for j, i := range g.idx {
			out[i] = PublishResult(res[j])
		}
	}
	if len(groups) == 1 {
		g := groups[0]
		res, err := c.store.Publish(ctx, g.Namespace, g.Queue, g.Jobs)
		if err != nil {
			return nil, publishError(err)
		}
		collect(g, res)
		return out, nil
	}
	batches := make([]store.QueueJobs, len(groups))
	for i, g := range groups {
		batches[i] = g.QueueJobs
	}
	res, err := c.store.PublishQueues(ctx, batches)
	if err != nil {
		return nil, publishError(err)
	}
	for i, g := range groups {
		collect(g, res[i])
	}
	return out, nil
}

// validateJob validates a job and returns its fields, every default applied.
func (c *Client) validateJob(p PublishParams) (store.NewJob, error) {
	if err := validateQueue(p.Namespace, p.Queue); err != nil {
		return store.NewJob{}, err
	}
	if len(p.Payload) > c.cfg.MaxPayloadBytes {
		return store.NewJob{}, invalid("payload", "%d bytes is over the limit of %d", len(p.Payload), c.cfg.MaxPayloadBytes)
	}
	if p.Priority < 0 || p.Priority > MaxPriority {
		return store.NewJob{}, invalid("priority", "%d is outside 0..%d", p.Priority, MaxPriority)
	}
	if p.Delay < 0 {
		return store.NewJob{}, invalid("delay", "must not be negative")
	}
	if p.Delay > 0 && !p.RunAt.IsZero() {
		return store.NewJob{}, invalid("run_at", "give either delay or run_at, not both")
	}
	tries := p.Tries
	if tries == 0 {
		tries = c.cfg.DefaultTries
	}
	if tries < 1 {
		return store.NewJob{}, invalid("tries", "must be at least 1")
	}
	if p.TTL < 0 {
		return store.NewJob{}, invalid("ttl", "must not be negative")
	}
	if p.TTL > 0 && p.TTL < time.Millisecond {
		return store.NewJob{}, invalid("ttl", "must be at least 1ms")
	}
	if p.TTR < 0 {
		return store.NewJob{}, invalid("ttr", "must not be negative")
	}
	ttr := p.TTR
	callback := ""
	if p.Callback != nil {
		cb := *p.Callback
		if err := cb.validate(); err != nil {
			return store.NewJob{}, err
		}
		if ttr == 0 {
			ttr = max(c.cfg.DefaultTTR, cb.Timeout+callbackLeaseSlack)
		}
		if ttr <= cb.Timeout {
			return store.NewJob{}, invalid("ttr", "%s must be longer than the callback's timeout (%s), or a call still running would lose its lease", ttr, cb.Timeout)
		}
		callback = cb.encode()
	}
	if ttr == 0 {
		ttr = c.cfg.DefaultTTR
	}
	if ttr < time.Millisecond {
		return store.NewJob{}, invalid("ttr", "must be at least 1ms")
	}
	if p.Callback != nil && p.Backoff == (Backoff{}) {
		p.Backoff = Backoff{Base: DefaultCallbackBackoffBase, Max: DefaultCallbackBackoffMax}
	}
	if p.Backoff.Base < 0 || p.Backoff.Max < 0 {
		return store.NewJob{}, invalid("backoff", "must not be negative")
	}
	if p.Backoff.Max > 0 && p.Backoff.Max < p.Backoff.Base {
		return store.NewJob{}, invalid("backoff", "max must not be below base")
	}
	runAtMs := int64(0)
	wait := p.Delay
	if !p.RunAt.IsZero() {
		runAtMs = ceilUnixMilli(p.RunAt)
		if runAtMs <= 0 {
			return store.NewJob{}, invalid("run_at", "must be after 1970")
		}
		wait = time.Until(p.RunAt)
	}
	if p.TTL > 0 && wait >= p.TTL {
		return store.NewJob{}, invalid("ttl", "the job would expire before it is due (ttl %s, delay %s)", p.TTL, wait.Round(time.Millisecond))
	}
	if len(p.UniqueKey) > MaxUniqueKey {
		return store.NewJob{}, invalid("unique_key", "longer than %d bytes", MaxUniqueKey)
	}
	if p.UniqueFor < 0 {
		return store.NewJob{}, invalid("unique_for", "must not be negative")
	}
	uniqueFor := p.UniqueFor
	if uniqueFor == 0 {
		uniqueFor = c.cfg.DefaultUniqueFor
	}
	attrs, err := encodeAttributes(p.Attributes)
	if err != nil {
		return store.NewJob{}, err
	}
	return store.NewJob{
		ID: c.ids.next(), Payload: p.Payload, Priority: int64(p.Priority), Tries: int64(tries),
		TTLMs: p.TTL.Milliseconds(), TTRMs: ttr.Milliseconds(), DelayMs: ceilMillis(p.Delay), RunAtMs: runAtMs,
		BackoffBaseMs: ceilMillis(p.Backoff.Base), BackoffMaxMs: ceilMillis(p.Backoff.Max),
		UniqueKey: p.UniqueKey, UniqueForMs: max(uniqueFor.Milliseconds(), 1),
		Attributes: attrs, Callback: callback,
	}, nil
}

// ceilMillis is d in whole milliseconds, rounded up: the scripts count time in ms, and a delay cut
// down to the ms below would let a job start before it is due.
func ceilMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d > 0 && d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// ceilUnixMilli is t in Unix milliseconds, rounded up (see ceilMillis).
func ceilUnixMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

func encodeAttributes(a map[string]string) (string, error) {
	if len(a) == 0 {
		return "", nil
	}
	if len(a)-traceKeys(a) > MaxAttributes {
		return "", invalid("attributes", "%d entries is over the limit of %d", len(a), MaxAttributes)
	}
	for k, v := range a {
		if k == "" || len(k) > MaxAttributeKey {
			return "", invalid("attributes", "key %q must be 1..%d bytes", k, MaxAttributeKey)
		}
		if len(v) > MaxAttributeValue {
			return "", invalid("attributes", "value of %q is over %d bytes", k, MaxAttributeValue)
		}
	}
	b, err := json.Marshal(a)
	if err != nil {
		return "", invalid("attributes", "%v", err)
	}
	return string(b), nil
}

func validateQueue(ns, q string) error {
	if !validName(ns) {
		return invalid("namespace", "%q %s", ns, nameRule)
	}
	if !validName(q) {
		return invalid("queue", "%q %s", q, nameRule)
	}
	return nil
}
