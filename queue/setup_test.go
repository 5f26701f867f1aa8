package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/jaegertest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

func TestMain(m *testing.M) { redistest.Main(m, jaegertest.Stop) }

// fixture is what a queue test needs: a client on its own key prefix and a namespace.
type fixture struct {
	env    *redistest.Env
	client *queue.Client
	ns     string
}

func setup(t *testing.T, env *redistest.Env, cfg queue.Config) *fixture {
	t.Helper()
	cfg.Prefix = env.Prefix
	c, err := queue.NewClient(env.Client, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &fixture{env: env, client: c, ns: "ns"}
}

// ctxT is a context for a test's calls that ends with the test. Its bound only stops a call that
// hangs: it covers the whole test, whose waits and browser steps add up on a loaded machine, so
// it is far longer than any of them.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (f *fixture) publish(t *testing.T, p queue.PublishParams) string {
	t.Helper()
	if p.Namespace == "" {
		p.Namespace = f.ns
	}
	res, err := f.client.Publish(ctxT(t), p)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return res.ID
}

func (f *fixture) consume(t *testing.T, p queue.ConsumeParams) []queue.Delivery {
	t.Helper()
	if p.Namespace == "" {
		p.Namespace = f.ns
	}
	ds, err := f.client.Consume(ctxT(t), p)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	return ds
}

func (f *fixture) consumeOne(t *testing.T, q string) queue.Delivery {
	t.Helper()
	ds := f.consume(t, queue.ConsumeParams{Queues: []string{q}})
	if len(ds) != 1 {
		t.Fatalf("Consume(%s) got %d jobs, want 1", q, len(ds))
	}
	return ds[0]
}

func (f *fixture) stats(t *testing.T, q string) queue.Stats {
	t.Helper()
	s, err := f.client.Stats(ctxT(t), f.ns, q)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s
}

func (f *fixture) ack(t *testing.T, d queue.Delivery) {
	t.Helper()
	err := f.client.Ack(ctxT(t), queue.AckParams{Namespace: d.Namespace, Queue: d.Queue, ID: d.ID, Delivery: d.Delivery})
	if err != nil {
		t.Fatalf("Ack: %v", err)
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
