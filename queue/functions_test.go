package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// TestFullRedisStillAcksAndReads: on a Redis over maxmemory (noeviction), reads and the calls that
// free memory still work, as functions (their flags: no-writes, allow-oom) and as EVALSHA scripts,
// so a full Redis can be drained.
func TestFullRedisStillAcksAndReads(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"functions", "evalsha"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t, "maxmemory-policy noeviction")
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			if mode == "evalsha" {
				rdb.AddHook(&noFunctions{})
			}
			c, err := queue.NewClient(rdb, queue.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			ctx := ctxT(t)
			var ids []string
			for range 2 {
				r, err := c.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("x")})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, r.ID)
			}
			ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"q"}})
			if err != nil || len(ds) != 1 {
				t.Fatalf("Consume: %d, %v", len(ds), err)
			}
			// Redis is now full (used memory > maxmemory, noeviction).
			if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Stats(ctx, "ns", "q"); err != nil {
				t.Errorf("Stats on a full Redis: %v", err)
			}
			if _, err := c.Get(ctx, "ns", "q", ids[1]); err != nil {
				t.Errorf("Get on a full Redis: %v", err)
			}
			if err := c.Ack(ctx, queue.AckParams{Namespace: "ns", Queue: "q", ID: ds[0].ID, Delivery: ds[0].Delivery}); err != nil {
				t.Errorf("Ack on a full Redis: %v", err)
			}
			if _, err := c.Delete(ctx, "ns", "q", ids[1]); err != nil {
				t.Errorf("Delete on a full Redis: %v", err)
			}
		})
	}
}

// TestSameNamedLibraryIsReplaced: a library of this build's name but other content (tampered, or
// left by a broken build) is replaced once a call finds its function missing.
func TestSameNamedLibraryIsReplaced(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := ctxT(t)
	// Learn this build's library name, then put a different library of that name in its place.
	probe, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Stats(ctx, "ns", "q"); err != nil {
		t.Fatal(err)
	}
	_ = probe.Close()
	libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil || len(libs) != 1 {
		t.Fatalf("libraries: %+v, %v", libs, err)
	}
	name := libs[0].Name
	var keep []string
	for _, f := range libs[0].Functions {
		// Without the publish functions (publish, publish_ready): Publish finds one missing.
		if !strings.Contains(f.Name, "_publish") {
			keep = append(keep, f.Name)
		}
	}
	if err := rdb.FunctionDelete(ctx, name).Err(); err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	src.WriteString("#!lua name=" + name + "\n")
	for _, fn := range keep {
		src.WriteString("redis.register_function('" + fn + "', function() return 0 end)\n")
	}
	if err := rdb.FunctionLoad(ctx, src.String()).Err(); err != nil {
		t.Fatal(err)
	}

	c, err := queue.NewClient(rdb, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for i := range 3 {
		if _, err := c.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "q"}); err != nil {
			t.Fatalf("Publish %d with a same-named library of other content in Redis: %v", i, err)
		}
	}
}

// TestConcurrentFinishOfOneJob: two Finish calls on one leased job (two lmstfy clients, or a
// retry) that land in one combined script call give nil and ErrNotFound, never ErrLeaseLost.
func TestConcurrentFinishOfOneJob(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	const n = 200
	for range n {
		f.publish(t, queue.PublishParams{Queue: "q"})
	}
	ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: n})
	if len(ds) != n {
		t.Fatalf("consumed %d", len(ds))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, 2*n)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f.client.Finish(ctx, f.ns, "q", ds[i/2].ID)
		}()
	}
	close(start)
	wg.Wait()
	bad := 0
	for _, err := range errs {
		if err != nil && !errors.Is(err, queue.ErrNotFound) {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d concurrent Finish calls (two per leased job) failed with ErrLeaseLost, want nil or ErrNotFound", bad, 2*n)
	}
}

// countFunctionCmds counts FUNCTION commands sent (single or pipelined).
type countFunctionCmds struct {
	mu sync.Mutex
	n  int
}

func (h *countFunctionCmds) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countFunctionCmds) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "function" {
			h.mu.Lock()
			h.n++
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (h *countFunctionCmds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFirstLibraryLoadRefused: a Client whose first FUNCTION LOAD Redis refuses (here out of
// memory) runs its scripts with EVALSHA, single and pipelined, without trying the load again on
// every call.
func TestFirstLibraryLoadRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, "maxmemory-policy noeviction")
	ctx := ctxT(t)
	// A first client leases one job in each of two queues.
	rdb1 := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb1.Close() })
	c1, err := queue.NewClient(rdb1, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c1.Close() })
	var acks []queue.AckParams
	for _, q := range []string{"a", "b"} {
		if _, err := c1.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: q}); err != nil {
			t.Fatal(err)
		}
		ds, err := c1.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{q}})
		if err != nil || len(ds) != 1 {
			t.Fatalf("Consume: %d, %v", len(ds), err)
		}
		acks = append(acks, queue.AckParams{Namespace: "ns", Queue: q, ID: ds[0].ID, Delivery: ds[0].Delivery})
	}
	if err := rdb1.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	// A process that starts now (its Client's first call) on the full Redis.
	rdb2 := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb2.Close() })
	hook := &countFunctionCmds{}
	rdb2.AddHook(hook)
	c2, err := queue.NewClient(rdb2, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c2.Close() })
	for range 5 {
		if _, err := c2.Stats(ctx, "ns", "a"); err != nil {
			t.Fatalf("Stats: %v", err)
		}
	}
	hook.mu.Lock()
	loads := hook.n
	hook.mu.Unlock()
	if loads > 1 {
		t.Errorf("5 Stats calls sent %d FUNCTION LOADs (one per call, under loadMu)", loads)
	}
	errs, err := c2.AckMany(ctx, acks)
	if err != nil {
		t.Fatalf("AckMany over two queues on a full Redis: %v", err)
	}
	for i, e := range errs {
		if e != nil {
			t.Errorf("ack %d: %v", i, e)
		}
	}
}
