package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
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
	return c.jobReply(c.run(ctx, scriptGet, c.keys.get(ns, q), id), ns, q, "get")
}

// Peek returns the job a consumer would get next, without leasing it, or ErrNotFound when no job
// is ready. Jobs past their ttl are passed over. Its Position is as Get's: the number of ready jobs
// a consumer gets before it, which is 0 unless a higher priority holds more than Config.Batch ready
// jobs, the first Batch of them all past their ttl (docs/job-states.md).
func (c *Client) Peek(ctx context.Context, ns, q string) (*Job, error) {
	if err := validateQueue(ns, q); err != nil {
		return nil, err
	}
	return c.jobReply(c.run(ctx, scriptPeek, c.keys.get(ns, q)), ns, q, "peek")
}

func (c *Client) jobReply(cmd *redis.Cmd, ns, q, op string) (*Job, error) {
	f, err := cmd.Slice()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("queue: %s: %w", op, err)
	}
	j := parseJob(ns, q, f)
	return &j, nil
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
	args := make([]any, len(ids))
	for i, id := range ids {
		if err := validateID(id); err != nil {
			return 0, err
		}
		args[i] = id
	}
	n, err := c.run(ctx, scriptDelete, c.keys.get(ns, q), args...).Int()
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

// Stats returns the queue's depths and counters. It costs O(priorities in use), never O(jobs).
func (c *Client) Stats(ctx context.Context, ns, q string) (Stats, error) {
	if err := validateQueue(ns, q); err != nil {
		return Stats{}, err
	}
	f, err := c.run(ctx, scriptStats, c.keys.get(ns, q)).Slice()
	if err != nil {
		return Stats{}, fmt.Errorf("queue: stats: %w", err)
	}
	return parseStats(f), nil
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
	calls := make([]scriptCall, len(queues))
	for i, q := range queues {
		calls[i] = scriptCall{script: scriptStats, keys: c.keys.get(ns, q)}
	}
	cmds, err := c.runMany(ctx, calls)
	if err != nil {
		return nil, fmt.Errorf("queue: stats: %w", err)
	}
	out := make([]Stats, len(queues))
	for i, cmd := range cmds {
		f, err := cmd.Slice()
		if err != nil {
			return nil, fmt.Errorf("queue: stats of %s: %w", queues[i], err)
		}
		out[i] = parseStats(f)
	}
	return out, nil
}

func parseStats(f []any) Stats {
	s := Stats{
		Ready: num(f[0]), Delayed: num(f[1]), Leased: num(f[2]), Dead: num(f[3]), Done: num(f[4]),
		Paused: num(f[5]) == 1,
	}
	counters := map[string]*int64{
		"published": &s.Published, "consumed": &s.Consumed, "acked": &s.Acked, "nacked": &s.Nacked,
		"retried": &s.Retried, "dead_lettered": &s.DeadLettered, "expired": &s.Expired,
		"deleted": &s.Deleted, "released": &s.Released, "respawned": &s.Respawned,
		"dead_dropped": &s.DeadDropped, "purged": &s.Purged,
	}
	for i := 6; i+1 < len(f); i += 2 {
		if p, ok := counters[str(f[i])]; ok {
			var n int64
			_, _ = fmt.Sscan(str(f[i+1]), &n)
			*p = n
		}
	}
	return s
}

// Namespaces lists the namespaces that have queues, sorted.
func (c *Client) Namespaces(ctx context.Context) ([]string, error) {
	ns, err := c.rdb.SMembers(ctx, namespacesKey(c.cfg.Prefix)).Result()
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
	qs, err := c.rdb.SMembers(ctx, queuesKey(c.cfg.Prefix, ns)).Result()
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
	ok, err := c.rdb.SIsMember(ctx, queuesKey(c.cfg.Prefix, ns), q).Result()
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
	if err := c.register(ctx, ns, q); err != nil {
		return err
	}
	k := c.keys.get(ns, q)
	if err := c.rdb.HSet(ctx, k.meta(), "paused", "1").Err(); err != nil {
		return fmt.Errorf("queue: pause: %w", err)
	}
	return nil
}

// Resume lets consumers get jobs of a paused queue again and wakes the ones waiting.
func (c *Client) Resume(ctx context.Context, ns, q string) error {
	if err := validateQueue(ns, q); err != nil {
		return err
	}
	k := c.keys.get(ns, q)
	if err := c.rdb.HDel(ctx, k.meta(), "paused").Err(); err != nil {
		return fmt.Errorf("queue: resume: %w", err)
	}
	// Only a wake-up: a lost one costs waiting consumers at most Config.WakeupInterval.
	if err := c.rdb.Publish(ctx, k.channel, "r").Err(); err != nil {
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
	n, err := c.run(ctx, scriptPurge, c.keys.get(ns, q), "0").Int64()
	if err != nil {
		return 0, fmt.Errorf("queue: purge: %w", err)
	}
	return n, nil
}

// DeleteQueue removes the queue: its jobs, settings and counters, and its registry entry.
func (c *Client) DeleteQueue(ctx context.Context, ns, q string) (int64, error) {
	if err := validateQueue(ns, q); err != nil {
		return 0, err
	}
	n, err := c.run(ctx, scriptPurge, c.keys.get(ns, q), "1").Int64()
	if err != nil {
		return 0, fmt.Errorf("queue: delete queue: %w", err)
	}
	c.forget(ns, q)
	if err := c.rdb.SRem(ctx, queuesKey(c.cfg.Prefix, ns), q).Err(); err != nil {
		return n, fmt.Errorf("queue: delete queue: %w", err)
	}
	return n, nil
}

// DeleteNamespace deletes every queue of the namespace (jobs, settings, counters) and removes the
// namespace from the registry, so Namespaces and the maintenance loop no longer see it. It returns
// how many queues and jobs it removed. A producer that publishes to the namespace meanwhile
// registers it again.
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
	pipe := c.rdb.Pipeline()
	pipe.SRem(ctx, namespacesKey(c.cfg.Prefix), ns)
	pipe.Del(ctx, queuesKey(c.cfg.Prefix, ns))
	if _, err := pipe.Exec(ctx); err != nil {
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
	// Jobs are the ready jobs in the order consumers get them (Position set), then the delayed
	// jobs by due time, then the leased jobs by lease end.
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
	f, err := c.run(ctx, scriptPending, c.keys.get(p.Namespace, p.Queue), limit).Slice()
	if err != nil {
		return PendingResult{}, fmt.Errorf("queue: pending: %w", err)
	}
	res := PendingResult{Total: num(f[0])}
	n := int(num(f[1]))
	res.Jobs = make([]Job, 0, n)
	for i := range n {
		res.Jobs = append(res.Jobs, parseJob(p.Namespace, p.Queue, f[2+i*fieldsPerJob:2+(i+1)*fieldsPerJob]))
	}
	return res, nil
}
