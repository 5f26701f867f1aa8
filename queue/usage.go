package queue

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// StorageQuota is the most a namespace may store: jobs, and bytes of Redis memory its job records
// take. 0 is no quota.
type StorageQuota struct {
	Jobs  int64
	Bytes int64
}

// StorageQuotaFunc returns namespace ns's storage quota: Config.StorageQuota.
type StorageQuotaFunc func(ctx context.Context, ns string) (StorageQuota, error)

// Usage is what a namespace stores, as last measured (Client.Usage).
type Usage struct {
	// Jobs is the jobs its queues hold, in every state.
	Jobs int64
	// Bytes is the Redis memory its job records take, as Redis estimates it (MEMORY USAGE).
	Bytes int64
	// MeasuredAt is when it was measured; publishes of this process since are added to it.
	MeasuredAt time.Time
}

// maxMeteredNamespaces bounds the namespaces a usageMeter remembers; past it, it starts over.
const maxMeteredNamespaces = 10000

// usageMeter keeps each namespace's measured usage, so a publish checks a storage quota without
// a Redis call of its own. A namespace is measured when first asked, then again in the
// background when its figure is older than every; a measure that took d waits at least 10·d
// before the next, so measuring a namespace of many queues takes Redis a tenth of its time at
// most. What this process publishes meanwhile is added to the figure as it goes (each job's
// storedBytes): between two measures the figure misses only what other processes published.
type usageMeter struct {
	every   time.Duration
	measure func(ctx context.Context, ns string) (jobs, bytes int64, err error)

	mu sync.Mutex
	m  map[string]*metered
}

// metered is one namespace's figure. ready is closed once the first measure ended.
type metered struct {
	Usage
	next      time.Time // when to measure again
	measuring bool
	// since is what add counted since the measure under way began: the measure may have missed
	// it, so it is added to the measure's answer (counting some twice errs on the safe side).
	since Usage
	err   error
	ready chan struct{}
}

func newUsageMeter(every time.Duration, measure func(context.Context, string) (int64, int64, error)) *usageMeter {
	return &usageMeter{every: every, measure: measure, m: make(map[string]*metered)}
}

// get returns namespace ns's usage: measured now when it never was (the callers of one
// namespace wait for one measure), else the figure at hand, and a new measure started in the
// background when that one is due.
func (u *usageMeter) get(ctx context.Context, ns string) (Usage, error) {
	u.mu.Lock()
	e := u.m[ns]
	if e == nil {
		if len(u.m) >= maxMeteredNamespaces {
			clear(u.m)
		}
		e = &metered{ready: make(chan struct{})}
		u.m[ns] = e
		u.startLocked(ctx, ns, e)
	} else if !e.measuring && time.Now().After(e.next) {
		u.startLocked(ctx, ns, e)
	}
	u.mu.Unlock()
	select {
	case <-e.ready:
	case <-ctx.Done():
		return Usage{}, ctx.Err()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if e.MeasuredAt.IsZero() {
		return Usage{}, e.err
	}
	return e.Usage, nil
}

// startLocked measures ns on a context of its own (a caller that gives up does not cancel what
// the others wait for), bounded by a minute.
func (u *usageMeter) startLocked(ctx context.Context, ns string, e *metered) {
	e.measuring, e.since = true, Usage{}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		start := time.Now()
		jobs, bytes, err := u.measure(ctx, ns)
		took := time.Since(start)
		u.mu.Lock()
		defer u.mu.Unlock()
		e.measuring, e.err = false, err
		e.next = time.Now().Add(max(u.every, 10*took))
		if err == nil {
			e.Usage = Usage{Jobs: jobs + e.since.Jobs, Bytes: bytes + e.since.Bytes, MeasuredAt: start}
		}
		select {
		case <-e.ready:
		default:
			close(e.ready)
		}
	}()
}

// storedBytes is what a job of payload bytes is counted to take in Redis until the next measure
// says: the record's fields beside the payload (about 100 bytes), and a quarter more for the
// allocator, which rounds a large record up to its size class (an 8 KiB payload takes 10 KiB).
// Counting high errs on the safe side: the next measure corrects it.
func storedBytes(payload []byte) int64 { return int64(len(payload))*5/4 + 96 }

// add counts jobs and bytes this process just stored in ns into its figure.
func (u *usageMeter) add(ns string, jobs, bytes int64) {
	u.mu.Lock()
	if e := u.m[ns]; e != nil {
		e.Jobs += jobs
		e.Bytes += bytes
		e.since.Jobs += jobs
		e.since.Bytes += bytes
	}
	u.mu.Unlock()
}

// Usage returns what namespace ns stores, as last measured (see Config.UsageRefresh) plus what
// this client published since.
func (c *Client) Usage(ctx context.Context, ns string) (Usage, error) {
	return c.usage.get(ctx, ns)
}

// checkStorage refuses a publish of jobs records of bytes payload to namespace ns with a
// *sluice.QuotaError (max_stored_jobs or max_stored_bytes) when it would take the namespace past
// its storage quota. Without Config.StorageQuota, or with no storage quota for ns, it costs
// nothing.
func (c *Client) checkStorage(ctx context.Context, ns string, jobs, bytes int64) error {
	if c.cfg.StorageQuota == nil {
		return nil
	}
	q, err := c.cfg.StorageQuota(ctx, ns)
	if err != nil || (q.Jobs <= 0 && q.Bytes <= 0) {
		return err
	}
	u, err := c.usage.get(ctx, ns)
	if err != nil {
		return err
	}
	switch {
	case q.Jobs > 0 && u.Jobs+jobs > q.Jobs:
		return &sluice.QuotaError{Namespace: ns, Quota: "max_stored_jobs", Limit: q.Jobs}
	case q.Bytes > 0 && u.Bytes+bytes > q.Bytes:
		return &sluice.QuotaError{Namespace: ns, Quota: "max_stored_bytes", Limit: q.Bytes}
	}
	return nil
}
