package queue_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// flushMidPipeline runs the first command of the next pipeline, then empties the script cache and
// the function libraries before the rest run: what a failover or restart of one node does to a
// pipeline in flight.
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
		if err := h.admin.FunctionFlush(ctx).Err(); err != nil {
			return err
		}
		return next(ctx, cmds[1:])
	}
}

// When some scripts of a pipeline ran and others found their script or function gone, only the
// latter may run again: a publish that already ran must not be published twice.
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

// noFunctions answers FUNCTION and FCALL as a Redis before 7 does, and counts the script calls
// that reach Redis by kind.
type noFunctions struct {
	mu            sync.Mutex
	fcalls, evals int
}

func (h *noFunctions) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *noFunctions) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.refuse(cmd) {
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (h *noFunctions) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if h.refuse(cmd) {
				return cmd.Err()
			}
		}
		return next(ctx, cmds)
	}
}

// replyError is an error reply of Redis (go-redis tells those apart by the RedisError method).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func (h *noFunctions) refuse(cmd redis.Cmder) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch cmd.Name() {
	case "function", "fcall", "fcall_ro":
		h.fcalls++
		cmd.SetErr(replyError("ERR unknown command `" + cmd.Name() + "`, with args beginning with: "))
		return true
	case "evalsha", "eval":
		h.evals++
	}
	return false
}

// TestScriptsWithoutFunctions: on a store without FUNCTION (Redis before 7, Redis-compatible
// stores) every call, single or pipelined, runs as an EVALSHA script.
func TestScriptsWithoutFunctions(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	hook := &noFunctions{}
	rdb := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(env.URL, "redis://")})
	rdb.AddHook(hook)
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := queue.NewClient(rdb, queue.Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxT(t)
	if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "a", Payload: []byte("1")}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	two := []queue.PublishParams{{Namespace: "ns", Queue: "a", Payload: []byte("2")}, {Namespace: "ns", Queue: "b", Payload: []byte("3")}}
	if _, err := c.PublishMany(ctx, two); err != nil { // a pipeline over two queues
		t.Fatalf("PublishMany: %v", err)
	}
	ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"a", "b"}, Count: 3})
	if err != nil || len(ds) != 3 {
		t.Fatalf("Consume: %d jobs, %v", len(ds), err)
	}
	for _, d := range ds {
		if err := c.Ack(ctx, queue.AckParams{Namespace: "ns", Queue: d.Queue, ID: d.ID, Delivery: d.Delivery}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if hook.fcalls != 1 || hook.evals == 0 {
		t.Fatalf("%d FUNCTION/FCALL commands (want the one LOAD that found none), %d scripts", hook.fcalls, hook.evals)
	}
}

// TestFunctionLibraryReloaded: a node that lost the library (FUNCTION FLUSH, a restart without
// persistence) gets it again, and the call that found it missing runs once.
func TestFunctionLibraryReloaded(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxT(t)
	if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "a", Payload: []byte("1")}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil || len(libs) != 1 || !strings.HasPrefix(libs[0].Name, "sluice_queue_") {
		t.Fatalf("function libraries after the first call: %+v, %v", libs, err)
	}
	if err := rdb.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "a", Payload: []byte("2")}); err != nil {
		t.Fatalf("Publish after FUNCTION FLUSH: %v", err)
	}
	s, err := c.Stats(ctx, "ns", "a")
	if err != nil || s.Ready != 2 || s.Published != 2 {
		t.Fatalf("stats after two publishes: %+v, %v", s, err)
	}
	// An ack that finds the library gone (ack_noresult.lua, a bare function) reloads it too.
	d, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"a"}})
	if err != nil || len(d) != 1 {
		t.Fatalf("Consume: %v, %v", d, err)
	}
	if err := rdb.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, queue.AckParams{Namespace: "ns", Queue: "a", ID: d[0].ID, Delivery: d[0].Delivery}); err != nil {
		t.Fatalf("Ack after FUNCTION FLUSH: %v", err)
	}
	if s, err := c.Stats(ctx, "ns", "a"); err != nil || s.Acked != 1 || s.Ready != 1 {
		t.Fatalf("stats after the ack: %+v, %v", s, err)
	}
}

// HashTag is the tag the queue's own keys carry: a key made with it lands in the queue's slot.
func TestHashTagIsTheQueueKeysTag(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	if _, err := f.client.Publish(ctx, queue.PublishParams{Namespace: "shop", Queue: "mail", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	tag := f.client.HashTag("shop", "mail")
	if tag != "{shop:mail}" {
		t.Fatalf("HashTag = %q, want {shop:mail}", tag)
	}
	keys, err := f.env.Client.Keys(ctx, f.env.Prefix+":"+tag+":*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no queue key carries %s: %v, %v", tag, keys, err)
	}
}
