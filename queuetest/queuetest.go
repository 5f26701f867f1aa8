// Package queuetest helps the tests of code that uses [github.com/sluicehq/sluice/queue], as River's
// rivertest does for River: assert that the code under test enqueued a job (RequireEnqueued,
// RequireEnqueuedValue) or did not (RequireNotEnqueued), and run a queue's jobs through a handler
// synchronously, in the test's goroutine (Drain, DrainQueue), instead of starting workers and
// waiting for them.
//
// The helpers work on a real Redis, the one the code under test uses: start a client with
// NewClient from a Redis URL (or wrap an existing redis.UniversalClient with NewClientFrom), give
// each test its own Config.Prefix or namespace, and the tests can run in parallel. A failed
// assertion reports what the queue did hold, job by job, with the fields that did not match.
//
// The helpers take a testing.TB and fail the test through it (Fatalf), so they must run on the
// test's goroutine.
package queuetest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/queue"
)

// NewClient returns a queue.Client on the Redis at redisURL (redis://, rediss://,
// redis+sentinel://, redis+cluster://, as the sluice server takes it). The client and its
// connections are closed when the test ends. It fails the test when the URL or cfg is invalid.
func NewClient(tb testing.TB, redisURL string, cfg queue.Config) *queue.Client {
	tb.Helper()
	rdb, err := redisx.NewClient(redisURL)
	if err != nil {
		tb.Fatalf("queuetest: %v", err)
		return nil
	}
	tb.Cleanup(func() { _ = rdb.Close() })
	return NewClientFrom(tb, rdb, cfg)
}

// NewClientFrom returns a queue.Client on rdb, closed when the test ends (rdb, which the caller
// owns, stays open). It fails the test when cfg is invalid.
func NewClientFrom(tb testing.TB, rdb redis.UniversalClient, cfg queue.Config) *queue.Client {
	tb.Helper()
	c, err := queue.NewClient(rdb, cfg)
	if err != nil {
		tb.Fatalf("queuetest: %v", err)
		return nil
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// pendingOf lists the pending jobs of a queue for an assertion, failing the test when Redis
// cannot answer.
func pendingOf(ctx context.Context, tb testing.TB, c *queue.Client, ns, q string) queue.PendingResult {
	tb.Helper()
	res, err := c.Pending(ctx, queue.PendingParams{Namespace: ns, Queue: q, Limit: queue.MaxDeadPage})
	if err != nil {
		tb.Fatalf("queuetest: list the jobs of %s/%s: %v", ns, q, err)
	}
	return res
}
