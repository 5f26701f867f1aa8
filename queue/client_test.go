package queue_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/queue"
)

// flushMidPipeline runs the first command of the next pipeline, then empties the script cache
// before the rest run: what a failover or restart of one node does to a pipeline in flight.
type flushMidPipeline struct {
	armed bool
	admin *redis.Client
}

func (h *flushMidPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *flushMidPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *flushMidPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.armed || len(cmds) < 2 {
			return next(ctx, cmds)
		}
		h.armed = false
		if err := next(ctx, cmds[:1]); err != nil {
			return err
		}
		if err := h.admin.ScriptFlush(ctx).Err(); err != nil {
			return err
		}
		return next(ctx, cmds[1:])
	}
}

// When some scripts of a pipeline ran and others hit NOSCRIPT, only the latter may run again: a
// publish that already ran must not be published twice.
func TestPipelineNoScriptRerunsOnlyWhatDidNotRun(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close(); _ = admin.Close() })
	hook := &flushMidPipeline{admin: admin}
	rdb.AddHook(hook)
	c, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxT(t)
	two := []queue.PublishParams{{Namespace: "ns", Queue: "a"}, {Namespace: "ns", Queue: "b"}}
	if _, err := c.PublishMany(ctx, two); err != nil { // loads the scripts
		t.Fatalf("PublishMany: %v", err)
	}
	hook.armed = true
	res, err := c.PublishMany(ctx, two)
	if err != nil {
		t.Fatalf("PublishMany: %v", err)
	}
	if hook.armed {
		t.Fatal("the pipeline hook did not run")
	}
	for _, q := range []string{"a", "b"} {
		s, err := c.Stats(ctx, "ns", q)
		if err != nil {
			t.Fatal(err)
		}
		if s.Ready != 2 || s.Published != 2 {
			t.Fatalf("queue %s after two publishes of one job: ready %d, published %d", q, s.Ready, s.Published)
		}
	}
	// The job of the rerun publish is delivered once, not twice.
	seen := map[string]int{}
	for {
		ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"a"}, Count: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			seen[d.ID]++
		}
	}
	if seen[res[0].ID] != 1 {
		t.Fatalf("job %s delivered %d times", res[0].ID, seen[res[0].ID])
	}
}
