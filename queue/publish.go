package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
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
func (c *Client) Publish(ctx context.Context, p PublishParams) (PublishResult, error) {
	job, err := c.validateJob(p)
	if err != nil {
		return PublishResult{}, err
	}
	if err := c.register(ctx, p.Namespace, p.Queue, p.Callback != nil); err != nil {
		return PublishResult{}, err
	}
	res, err := c.publishComb.do(ctx, p.Namespace+"\x00"+p.Queue, publishReq{ns: p.Namespace, q: p.Queue, job: job})
	if err != nil {
		return PublishResult{}, fmt.Errorf("queue: publish: %w", err)
	}
	return res, nil
}

// publishReq is one validated job and its queue.
type publishReq struct {
	ns, q string
	job   jobFields
}

// runPublish publishes a batch of jobs of one queue in one script call.
func (c *Client) runPublish(ctx context.Context, _ string, reqs []publishReq) ([]PublishResult, error) {
	k := c.keys.get(reqs[0].ns, reqs[0].q)
	jobs := make([]*jobFields, len(reqs))
	for i := range reqs {
		jobs[i] = &reqs[i].job
	}
	return c.publishOneQueue(ctx, k, jobs)
}

// publishOneQueue publishes jobs of the queue of k in one script call: a lone job due now without
// a ttl, unique key or callback with publish_ready.lua, jobs due now without a unique key or
// callback with publish_batch.lua, any others with publish.lua.
func (c *Client) publishOneQueue(ctx context.Context, k queueKeys, jobs []*jobFields) ([]PublishResult, error) {
	if c.publishesReady(ctx) {
		if len(jobs) == 1 && jobs[0].dueNowPlain() {
			return c.publishReady(ctx, k, jobs[0])
		}
		if allDueNowUnkeyed(jobs) {
			return c.publishBatch(ctx, k, jobs)
		}
	}
	reply, err := c.run(ctx, scriptPublish, k, publishArgs(jobs)...).Result()
	if err != nil {
		return nil, err
	}
	return parsePublishReply(reply, len(jobs))
}

// publishArgs are publish.lua's own arguments for jobs: their count, then jobArgCount per job.
func publishArgs(jobs []*jobFields) []any {
	args := make([]any, 0, 1+len(jobs)*jobArgCount)
	args = append(args, len(jobs))
	for _, f := range jobs {
		args = f.appendArgs(args)
	}
	return args
}

func parsePublishReply(reply any, n int) ([]PublishResult, error) {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 2*n {
		return nil, fmt.Errorf("queue: publish: unexpected reply %T", reply)
	}
	out := make([]PublishResult, n)
	for i := range out {
		out[i] = PublishResult{ID: str(vals[2*i]), Duplicate: num(vals[2*i+1]) == 1}
	}
	return out, nil
}

// PublishMany adds jobs, one script call (one round trip) per queue, pipelined. Every job is
// validated first: one bad job publishes nothing and the error names it (jobs[3].priority).
// Results come in the order of ps.
func (c *Client) PublishMany(ctx context.Context, ps []PublishParams) ([]PublishResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	type group struct {
		ns, q     string
		idx       []int
		jobs      []*jobFields
		callbacks bool
	}
	var groups []*group
	byQueue := map[string]*group{}
	for i, p := range ps {
		job, err := c.validateJob(p)
		if err != nil {
			return nil, inField(fmt.Sprintf("jobs[%d]", i), err)
		}
		key := p.Namespace + "\x00" + p.Queue
		g := byQueue[key]
		if g == nil {
			g = &group{ns: p.Namespace, q: p.Queue}
			byQueue[key] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
		g.jobs = append(g.jobs, &job)
		g.callbacks = g.callbacks || p.Callback != nil
	}
	for _, g := range groups {
		if err := c.register(ctx, g.ns, g.q, g.callbacks); err != nil {
			return nil, err
		}
	}
	out := make([]PublishResult, len(ps))
	collect := func(g *group, res []PublishResult) {
		for j, i := range g.idx {
			out[i] = res[j]
		}
	}
	if len(groups) == 1 {
		g := groups[0]
		res, err := c.publishOneQueue(ctx, c.keys.get(g.ns, g.q), g.jobs)
		if err != nil {
			return nil, fmt.Errorf("queue: publish: %w", err)
		}
		collect(g, res)
		return out, nil
	}
	calls := make([]scriptCall, len(groups))
	for i, g := range groups {
		calls[i] = scriptCall{script: scriptPublish, keys: c.keys.get(g.ns, g.q), args: publishArgs(g.jobs)}
	}
	cmds, err := c.runMany(ctx, calls)
	if err != nil {
		return nil, fmt.Errorf("queue: publish: %w", err)
	}
	for i, g := range groups {
		reply, err := cmds[i].Result()
		if err != nil {
			return nil, fmt.Errorf("queue: publish to %s/%s: %w", g.ns, g.q, err)
		}
		res, err := parsePublishReply(reply, len(g.idx))
		if err != nil {
			return nil, err
		}
		collect(g, res)
	}
	return out, nil
}

// validateJob validates a job and returns its fields, every default applied.
func (c *Client) validateJob(p PublishParams) (jobFields, error) {
	if err := validateQueue(p.Namespace, p.Queue); err != nil {
		return jobFields{}, err
	}
	if len(p.Payload) > c.cfg.MaxPayloadBytes {
		return jobFields{}, invalid("payload", "%d bytes is over the limit of %d", len(p.Payload), c.cfg.MaxPayloadBytes)
	}
	if p.Priority < 0 || p.Priority > MaxPriority {
		return jobFields{}, invalid("priority", "%d is outside 0..%d", p.Priority, MaxPriority)
	}
	if p.Delay < 0 {
		return jobFields{}, invalid("delay", "must not be negative")
	}
	if p.Delay > 0 && !p.RunAt.IsZero() {
		return jobFields{}, invalid("run_at", "give either delay or run_at, not both")
	}
	tries := p.Tries
	if tries == 0 {
		tries = c.cfg.DefaultTries
	}
	if tries < 1 {
		return jobFields{}, invalid("tries", "must be at least 1")
	}
	if p.TTL < 0 {
		return jobFields{}, invalid("ttl", "must not be negative")
	}
	if p.TTL > 0 && p.TTL < time.Millisecond {
		return jobFields{}, invalid("ttl", "must be at least 1ms")
	}
	if p.TTR < 0 {
		return jobFields{}, invalid("ttr", "must not be negative")
	}
	ttr := p.TTR
	callback := ""
	if p.Callback != nil {
		cb := *p.Callback
		if err := cb.validate(); err != nil {
			return jobFields{}, err
		}
		if ttr == 0 {
			ttr = max(c.cfg.DefaultTTR, cb.Timeout+callbackLeaseSlack)
		}
		if ttr <= cb.Timeout {
			return jobFields{}, invalid("ttr", "%s must be longer than the callback's timeout (%s), or a call still running would lose its lease", ttr, cb.Timeout)
		}
		callback = cb.encode()
	}
	if ttr == 0 {
		ttr = c.cfg.DefaultTTR
	}
	if ttr < time.Millisecond {
		return jobFields{}, invalid("ttr", "must be at least 1ms")
	}
	if p.Callback != nil && p.Backoff == (Backoff{}) {
		p.Backoff = Backoff{Base: DefaultCallbackBackoffBase, Max: DefaultCallbackBackoffMax}
	}
	if p.Backoff.Base < 0 || p.Backoff.Max < 0 {
		return jobFields{}, invalid("backoff", "must not be negative")
	}
	if p.Backoff.Max > 0 && p.Backoff.Max < p.Backoff.Base {
		return jobFields{}, invalid("backoff", "max must not be below base")
	}
	runAtMs := int64(0)
	wait := p.Delay
	if !p.RunAt.IsZero() {
		runAtMs = ceilUnixMilli(p.RunAt)
		if runAtMs <= 0 {
			return jobFields{}, invalid("run_at", "must be after 1970")
		}
		wait = time.Until(p.RunAt)
	}
	if p.TTL > 0 && wait >= p.TTL {
		return jobFields{}, invalid("ttl", "the job would expire before it is due (ttl %s, delay %s)", p.TTL, wait.Round(time.Millisecond))
	}
	if len(p.UniqueKey) > MaxUniqueKey {
		return jobFields{}, invalid("unique_key", "longer than %d bytes", MaxUniqueKey)
	}
	if p.UniqueFor < 0 {
		return jobFields{}, invalid("unique_for", "must not be negative")
	}
	uniqueFor := p.UniqueFor
	if uniqueFor == 0 {
		uniqueFor = c.cfg.DefaultUniqueFor
	}
	attrs, err := encodeAttributes(p.Attributes)
	if err != nil {
		return jobFields{}, err
	}
	return jobFields{
		id: c.ids.next(), payload: p.Payload, priority: int64(p.Priority), tries: int64(tries),
		ttlMs: p.TTL.Milliseconds(), ttrMs: ttr.Milliseconds(), delayMs: ceilMillis(p.Delay), runAtMs: runAtMs,
		backoffBaseMs: ceilMillis(p.Backoff.Base), backoffMaxMs: ceilMillis(p.Backoff.Max),
		uniqueKey: p.UniqueKey, uniqueForMs: max(uniqueFor.Milliseconds(), 1),
		attributes: attrs, callback: callback,
	}, nil
}

// jobFields is one validated job, every default applied: what a publish script writes.
type jobFields struct {
	id                             string
	payload                        []byte
	priority, tries                int64
	ttlMs, ttrMs, delayMs, runAtMs int64
	backoffBaseMs, backoffMaxMs    int64
	uniqueKey                      string
	uniqueForMs                    int64
	attributes, callback           string
}

// jobArgCount is the number of publish.lua arguments per job.
const jobArgCount = 14

// appendArgs appends the job's jobArgCount arguments of publish.lua to dst.
func (f *jobFields) appendArgs(dst []any) []any {
	return append(dst,
		f.id, f.payload, f.priority, f.tries, f.ttlMs, f.ttrMs, f.delayMs, f.runAtMs,
		f.backoffBaseMs, f.backoffMaxMs, f.uniqueKey, f.uniqueForMs, f.attributes, f.callback,
	)
}

// dueNowPlain reports whether the job is due at once and has no ttl, unique key or callback:
// the jobs publish_ready.lua takes.
func (f *jobFields) dueNowPlain() bool {
	return f.ttlMs == 0 && f.dueNowUnkeyed()
}

// dueNowUnkeyed reports whether the job is due at once and has no unique key or callback: the
// jobs publish_batch.lua takes.
func (f *jobFields) dueNowUnkeyed() bool {
	return f.delayMs == 0 && f.runAtMs == 0 && f.uniqueKey == "" && f.callback == ""
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
	if len(a) > MaxAttributes {
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
