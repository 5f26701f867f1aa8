package ui

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// sampleTwoQueues publishes to two queues, samples (one pipeline of two script calls) and checks
// both got their sample.
func sampleTwoQueues(t *testing.T, env *redistest.Env, u *UI, q *queue.Client) {
	t.Helper()
	ctx := ctxT(t)
	for _, name := range []string{"a", "b"} {
		if _, err := q.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: name, Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.sampler.SampleOnce(ctx); err != nil {
		t.Fatalf("SampleOnce: %v", err)
	}
	for _, name := range []string{"a", "b"} {
		if n, err := env.Client.HLen(ctx, env.Prefix+":ui:throughput:{ns:"+name+"}").Result(); err != nil || n != 2 {
			t.Fatalf("queue %s: %d fields, %v; want a sample and the histogram it kept", name, n, err)
		}
	}
}

// TestSampleWithoutFunctions: on a store without FUNCTION the sample script runs as EVALSHA.
func TestSampleWithoutFunctions(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	rdb, counts := redistest.WithoutFunctions(t, env)
	plain := *env
	plain.Client = rdb
	u, q := setup(t, &plain)
	sampleTwoQueues(t, &plain, u, q)
	if _, evals := counts.Counts(); evals == 0 {
		t.Fatal("no EVALSHA sent")
	}
}

// TestSampleAfterFunctionFlush: a sample that finds the library gone (a restarted or flushed
// Redis) loads it again.
func TestSampleAfterFunctionFlush(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t) // its own server: the flush must not reach other tests
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	env := &redistest.Env{Client: rdb, Prefix: "sluice", URL: "redis://" + srv.Addr()}
	u, q := setup(t, env)
	sampleTwoQueues(t, env, u, q)
	if err := rdb.FunctionFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(context.Background(), "sluice:ui:throughput:{ns:a}", "sluice:ui:throughput:{ns:b}").Err(); err != nil {
		t.Fatal(err)
	}
	sampleTwoQueues(t, env, u, q)
}
