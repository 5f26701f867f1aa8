package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/queue/internal/store"
)

// MaintainResult counts what one pass did.
type MaintainResult struct {
	Queues   int // queues visited because the due index had them due
	Promoted int // delayed jobs made ready
	Reaped   int // expired leases handled
	Dropped  int // dead jobs and results trimmed
	Failed   int // queues whose housekeeping failed (tried again after a backoff)
	Swept    int // queues of the registry the sweep visited to index them
	// Left says the pass stopped at its time budget with due queues not visited yet.
	Left bool

	failures []maintainFailure // the failed queues, for the Maintainer's log
}

// maintainFailure is a queue whose housekeeping failed in a pass.
type maintainFailure struct {
	queue   store.QueueName
	count   int           // failures in a row
	retryIn time.Duration // until the next try
	err     error
}

// maintainChunk is the most queues one round trip of a pass maintains.
const maintainChunk = 100

// sweepBatch is about the most registered queues one pass's sweep step indexes.
const sweepBatch = 200

// maintenance is what a client's maintenance passes carry from one to the next: the queues whose
// housekeeping failed in a row, for their backoff, and where the sweep of the registry stands.
type maintenance struct {
	backoff duework.Backoff[store.QueueName]
	mu      sync.Mutex
	sweep   sweepCursor
}

// sweepCursor is where a sweep of the registry stands: the namespaces' SSCAN cursor and the names
// of its last page not begun yet, and the namespace under way with its queues' SSCAN cursor.
type sweepCursor struct {
	started  bool
	nsCursor uint64
	pending  []string
	ns       string
	qCursor  uint64
}

// MaintainOnce runs one maintenance pass with the Maintainer's defaults: the housekeeping of every
// queue with something due (as the due index says), and, while the registry has not been swept
// lately, one bounded step of the sweep that indexes registered queues. A queue whose housekeeping
// fails does not stop the others: the error names every such queue, after all the others were done.
func (c *Client) MaintainOnce(ctx context.Context) (MaintainResult, error) {
	res, err := c.maintainPass(ctx, MaintainerConfig{}.withDefaults())
	for _, f := range res.failures {
		err = errors.Join(err, f.err)
	}
	return res, err
}

// maintainPass is one pass: the due queues in chunks until the time budget is spent, then a step
// of the sweep. The error is the pass's own (the due index could not be read); the failures of
// single queues are in the result.
func (c *Client) maintainPass(ctx context.Context, cfg MaintainerConfig) (MaintainResult, error) {
	var res MaintainResult
	deadline := time.Now().Add(cfg.Budget)
	now, due, err := c.store.DueQueues(ctx, cfg.Batch)
	if err != nil {
		return res, fmt.Errorf("queue: maintain: %w", err)
	}
	// The first chunk always runs: a budget spent reading the index still moves the head.
	for start := 0; start < len(due); start += maintainChunk {
		if start > 0 && (time.Now().After(deadline) || ctx.Err() != nil) {
			res.Left = true
			break
		}
		res.Queues += c.maintainQueues(ctx, now, due[start:min(start+maintainChunk, len(due))], &res)
	}
	if !res.Left {
		swept, err := c.sweepStep(ctx, now, cfg.SweepEvery, &res)
		res.Swept = swept
		if err != nil {
			return res, fmt.Errorf("queue: maintain: sweep the registry: %w", err)
		}
	}
	return res, nil
}

// maintainQueues runs one housekeeping step on each queue (one round trip), adds what it did to
// res and returns how many steps succeeded. A queue that failed has its entry in the due index
// moved to its next try (now, Redis's time in ms, plus its backoff), so it does not stand in front
// of the others meanwhile.
func (c *Client) maintainQueues(ctx context.Context, now int64, queues []store.QueueName, res *MaintainResult) int {
	done, errs := c.store.MaintainEach(ctx, queues)
	ok := 0
	for i, q := range queues {
		if errs[i] == nil {
			ok++
			res.Promoted += done[i].Promoted
			res.Reaped += done[i].Reaped
			res.Dropped += done[i].Dropped
			c.maint.backoff.Succeeded(q)
			continue
		}
		res.Failed++
		count, retryIn := c.maint.backoff.Failed(q)
		err := fmt.Errorf("queue: maintain %s/%s: %w", q.Namespace, q.Queue, errs[i])
		if derr := c.store.DeferDue(ctx, q, now+retryIn.Milliseconds()); derr != nil {
			err = errors.Join(err, fmt.Errorf("queue: defer %s/%s: %w", q.Namespace, q.Queue, derr))
		}
		res.failures = append(res.failures, maintainFailure{queue: q, count: count, retryIn: retryIn, err: err})
	}
	return ok
}

// sweepStep indexes about sweepBatch more queues of the registry, unless a sweep completed within
// the last every (the mark it leaves in Redis): it announces the queues' slots (on a Cluster), and
// a maintenance step of a queue sets its entry in the due index. Queues whose step fails are in res, as in a pass. It returns how many queues it
// indexed. When the last page of the registry is done it marks the sweep complete for every.
func (c *Client) sweepStep(ctx context.Context, now int64, every time.Duration, res *MaintainResult) (int, error) {
	done, err := c.store.IndexSwept(ctx)
	if err != nil || done {
		return 0, err
	}
	c.maint.mu.Lock()
	cur := c.maint.sweep
	c.maint.mu.Unlock()
	visited, swept := 0, 0
	for visited < sweepBatch && ctx.Err() == nil {
		if cur.ns == "" {
			if len(cur.pending) == 0 {
				if cur.started && cur.nsCursor == 0 {
					cur = sweepCursor{}
					err = c.store.MarkIndexSwept(ctx, every)
					break
				}
				cur.started = true
				if cur.pending, cur.nsCursor, err = c.store.ScanNamespaces(ctx, cur.nsCursor, 100); err != nil {
					break
				}
				continue
			}
			cur.ns, cur.pending, cur.qCursor = cur.pending[0], cur.pending[1:], 0
		}
		var names []string
		if names, cur.qCursor, err = c.store.ScanQueues(ctx, cur.ns, cur.qCursor, sweepBatch-int64(visited)); err != nil {
			break
		}
		queues := make([]store.QueueName, len(names))
		for i, q := range names {
			queues[i] = store.QueueName{Namespace: cur.ns, Queue: q}
		}
		if err = c.store.AnnounceQueues(ctx, queues); err != nil {
			break
		}
		for start := 0; start < len(queues); start += maintainChunk {
			_ = c.maintainQueues(ctx, now, queues[start:min(start+maintainChunk, len(queues))], res)
		}
		swept += len(queues)
		visited += max(len(queues), 1) // an empty page counts, so a step ends
		if cur.qCursor == 0 {
			cur.ns = ""
		}
	}
	c.maint.mu.Lock()
	c.maint.sweep = cur
	c.maint.mu.Unlock()
	return swept, err
}
