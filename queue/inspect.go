package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/queue/internal/store"
)

// Get returns a job in any state, with its position among ready jobs when it is ready.
// It returns ErrNotFound when the job is gone (acked without result, deleted, expired, trimmed).
// A waiting job is gone as soon as its ttl passes, before housekeeping removes it; so is a leased
// one whose lease ended after its ttl. Get only reads.
func (c *Client) Get(ctx context.Context, ns, q, id string) (*Job, error) {
	if err := validateQueue(ns, q); err != nil {
		return nil, err
	}
	if err := validateID(id); err != nil {
		return nil, err
	}
	j, err := c.store.Get(ctx, ns, q, id)
	return jobResult(ns, q, "get", &j, err)
}

// Peek returns the job a consumer would get next, without leasing it, or ErrNotFound when no job
// is ready. Jobs past their ttl are passed over. Its Position is as Get's: the number of ready jobs
// a consumer gets before it, which is 0 unless a higher priority holds more than Config.Batch ready
// jobs, the first Batch of them all past their ttl (docs/job-states.md).
func (c *Client) Peek(ctx context.Context, ns, q string) (*Job, error) {
	if err := validateQueue(ns, q); err != nil {
		return nil, err
	}
	j, err := c.store.Peek(ctx, ns, q)
	return jobResult(ns, q, "peek", &j, err)
}

// jobResult is the Job the store read for op, or ErrNotFound.
func jobResult(ns, q, op string, j *store.Job, err error) (*Job, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("queue: %s: %w", op, err)
	}
	job := jobOf(ns, q, j)
	return &job, nil
}

// Delete removes jobs in any state (cancel) and returns how many existed. A consumer holding one
// gets ErrNotFound when it acks.
func (c *Client) Delete(ctx context.Context, ns, q string, ids ...string) (int, error) {
	if err := validateQueue(ns, q); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	for _, id := range ids {
		if err := validateID(id); err != nil {
			return 0, err
		}
	}
	n, err := c.store.Delete(ctx, ns, q, ids)
	if err != nil {
		return 0, fmt.Errorf("queue: delete: %w", err)
	}
	return n, nil
}

// Stats are a queue's depths and its counters since it was first used.
type Stats struct {
	Ready   int64
	Delayed int64
	Leased  int64
	Dead    int64
	Done    int64 // acked jobs whose results are kept
	Paused  bool
	// OldestReady is how long the oldest ready job has waited for a consumer: the longest wait of
	// the jobs at the head of each priority's line and of the callback lane, counted from when
	// the job became ready (its due time, or its publish time when later); 0 when none is ready.
	OldestReady time.Duration
	// ProcessingTimes is the histogram of the queue's acks by processing time (cumulative).
	ProcessingTimes ProcessingTimes

	Published    int64
	Consumed     int64 // deliveries
	Acked        int64
	Nacked       int64
	Retried      int64 // nacks and lease expiries that scheduled another try
	DeadLettered int64
	Expired      int64
	Deleted      int64
	Released     int64
	Respawned    int64
	DeadDropped  int64 // dead jobs trimmed by retention or size
	Purged       int64
}

// statsOf is the store's reading as Stats.
func statsOf(st store.Stats) Stats {
	return Stats{
		Ready: st.Ready, Delayed: st.Delayed, Leased: st.Leased, Dead: st.Dead, Done: st.Done, Paused: st.Paused,
		OldestReady:     time.Duration(st.OldestReadyMs) * time.Millisecond,
		ProcessingTimes: ProcessingTimes(st.ProcessingTimes),
		Published:       st.Published, Consumed: st.Consumed, Acked: st.Acked, Nacked: st.Nacked,
		Retried: st.Retried, DeadLettered: st.DeadLettered, Expired: st.Expired, Deleted: st.Deleted,
		Released: st.Released, Respawned: st.Respawned, DeadDropped: st.DeadDropped, Purged: st.Purged,
	}
}

// Stats returns the queue's depths and counters. It costs O(priorities in use), never O(jobs).
func (c *Client) Stats(ctx context.Context, ns, q string) (Stats, error) {
	if err := validateQueue(ns, q); err != nil {
		return Stats{}, err
	}
	st, err := c.store.Stats(ctx, ns, q)
	if err != nil {
		return Stats{}, fmt.Errorf("queue: stats: %w", err)
	}
	return statsOf(st), nil
}

// StatsMany returns the stats of many queues of a namespace in one pipelined round trip.
func (c *Client) StatsMany(ctx context.Context, ns string, queues []string) ([]Stats, error) {
	for _, q := range queues {
		if err := validateQueue(ns, q); err != nil {
			return nil, err
		}
	}
	if len(queues) == 0 {
		return nil, nil
	}
	sts, err := c.store.StatsMany(ctx, ns, queues)
	if err != nil {
		return nil, fmt.Errorf("queue: stats: %w", err)
	}
	out := make([]Stats, len(sts))
	for i, st := range sts {
		out[i] = statsOf(st)
	}
	return out, nil
}

// Namespaces lists the namespaces that have queues, sorted.
func (c *Client) Namespaces(ctx context.Context) ([]string, error) {
	ns, err := c.store.Namespaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: namespaces: %w", err)
	}
	slices.Sort(ns)
	return ns, nil
}

// Queues lists the queues of a namespace, sorted. A queue exists from its first publish until it
// is deleted with DeleteQueue.
func (c *Client) Queues(ctx context.Context, ns string) ([]string, error) {
	if !validName(ns) {
		return nil, invalid("namespace", "%q %s", ns, nameRule)
	}
	qs, err := c.store.Queues(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("queue: queues: %w", err)
	}
	slices.Sort(qs)
	return qs, nil
}

// QueueExists reports whether the queue is registered in its namespace (published to, or paused,
// and not deleted since). One SISMEMBER.
func (c *Client) QueueExists(ctx context.Context, ns, q string) (bool, error) {
	if err := validateQueue(ns, q); err != nil {
		return false, err
	}
	ok, err := c.store.QueueExists(ctx, ns, q)
	if err != nil {
		return false, fmt.Errorf("queue: queue exists: %w", err)
	}
	return ok, nil
}

// Pause stops consumers from getting jobs of the queue; publishing and timers go on.
func (c *Client) Pause(ctx context.Context, ns, q string) error {
	if err := validateQueue(ns, q); err != nil {
		return err
	}
	if err := c.register(ctx, ns, q, false); err != nil {
		return err
	}
	if err := c.store.Pause(ctx, ns, q); err != nil {
		return fmt.Errorf("queue: pause: %w", err)
	}
	return nil
}

// Resume lets consumers get jobs of a paused queue again and wakes the ones waiting.
func (c *Client) Resume(ctx context.Context, ns, q string) error {
	if err := validateQueue(ns, q); err != nil {
		return err
	}
	if err := c.store.Resume(ctx, ns, q); err != nil {
		return fmt.Errorf("queue: resume: %w", err)
	}
	return nil
}

// Purge removes every job of the queue in every state (delayed, ready, leased, dead, done) and
// returns how many there were. The queue, its settings and its counters stay.
func (c *Client) Purge(ctx context.Context, ns, q string) (int64, error) {
	if err := validateQueue(ns, q); err != nil {
		return 0, err
	}
	n, err := c.store.Purge(ctx, ns, q)
	if err != nil {
		return 0, fmt.Errorf("queue: purge: %w", err)
	}
	return n, nil
}

// DeleteQueue removes the queue: the schedules that publish to it (first, so that none of them
// brings it back), its jobs, settings and counters, and its registry entry.
func (c *Client) DeleteQueue(ctx context.Context, ns, q string) (int64, error) {
	if err := validateQueue(ns, q); err != nil {
		return 0, err
	}
	if _, err := c.store.DropQueueSchedules(ctx, ns, q); err != nil {
		return 0, fmt.Errorf("queue: delete queue: its schedules: %w", err)
	}
	n, err := c.store.DeleteQueue(ctx, ns, q)
	if err != nil {
		return n, fmt.Errorf("queue: delete queue: %w", err)
	}
	return n, nil
}

// DeleteNamespace deletes every queue of the namespace (jobs, settings, counters, schedules) and
// every schedule left in it (of a queue never published to), and removes the namespace from the
// registry, so Namespaces and the maintenance loop no longer see it. It returns how many queues
// and jobs it removed. A producer that publishes to the namespace meanwhile registers it again.
func (c *Client) DeleteNamespace(ctx context.Context, ns string) (queues int, jobs int64, err error) {
	names, err := c.Queues(ctx, ns)
	if err != nil {
		return 0, 0, err
	}
	for _, q := range names {
		n, err := c.DeleteQueue(ctx, ns, q)
		if err != nil {
			return queues, jobs, err
		}
		queues++
		jobs += n
	}
	if _, err := c.store.DropNamespaceSchedules(ctx, ns); err != nil {
		return queues, jobs, fmt.Errorf("queue: delete namespace: its schedules: %w", err)
	}
	if err := c.store.ForgetNamespace(ctx, ns); err != nil {
		return queues, jobs, fmt.Errorf("queue: delete namespace: %w", err)
	}
	return queues, jobs, nil
}

// PendingParams name the queue whose pending jobs Pending lists.
type PendingParams struct {
	Namespace string
	Queue     string
	// Limit is the most jobs to return (1..1000). 0: 100.
	Limit int
}

// PendingResult is the first pending jobs of a queue.
type PendingResult struct {
	// Jobs are the ready jobs in the order consumers get them (Position set), then the ready
	// callback jobs in the order the deliverer gets them (Position within the callback lane), then
	// the delayed jobs by due time, then the leased jobs by lease end.
	Jobs []Job
	// Total is the number of pending jobs, of which Jobs are the first.
	Total int64
}

// Pending lists the jobs of a queue that are not finished: ready, delayed and leased, in that
// order, at most Limit of them. It reads only, in one script call, so it suits small queues and
// the heads of large ones (dashboards, the queuetest helpers); jobs past their ttl that wait for
// housekeeping are left out, as Get leaves them out, and then Jobs may hold fewer than Limit jobs
// although Total is larger.
func (c *Client) Pending(ctx context.Context, p PendingParams) (PendingResult, error) {
	if err := validateQueue(p.Namespace, p.Queue); err != nil {
		return PendingResult{}, err
	}
	limit, err := pageLimit(p.Limit, 100)
	if err != nil {
		return PendingResult{}, err
	}
	page, err := c.store.Pending(ctx, p.Namespace, p.Queue, limit)
	if err != nil {
		return PendingResult{}, fmt.Errorf("queue: pending: %w", err)
	}
	jobs := appendJobs(make([]Job, 0, len(page.Jobs)), p.Namespace, p.Queue, page.Jobs)
	return PendingResult{Jobs: jobs, Total: page.Total}, nil
}
