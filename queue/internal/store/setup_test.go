package store

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// newTestStore is a Store on env with the queue client's default settings, and a context that ends
// with the test or after 30 s.
func newTestStore(t *testing.T, env *redistest.Env) (*Store, context.Context) {
	t.Helper()
	return newTestStoreLogging(t, env, nil)
}

func newTestStoreLogging(t *testing.T, env *redistest.Env, log *slog.Logger) (*Store, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s := New(env.Client, Config{
		Prefix: env.Prefix, Batch: 1000, DeadRetention: 7 * 24 * time.Hour, MaxDead: 100_000,
		ResultRetention: 24 * time.Hour, MaxResults: 100_000, ReplicaAckTimeout: time.Second, Logger: log,
	})
	return s, ctx
}

var lastTestID atomic.Int64

// newJob is a job due now with payload and the queue client's defaults (3 tries, a 30 s lease, a
// unique key held for a day), under a new id.
func newJob(payload string) *NewJob {
	return &NewJob{
		ID: "job-" + strconv.FormatInt(lastTestID.Add(1), 10), Payload: []byte(payload),
		Tries: 3, TTRMs: 30_000, UniqueForMs: 24 * 3600 * 1000,
	}
}

// publish publishes jobs to ns/q one script call each.
func publish(t *testing.T, ctx context.Context, s *Store, ns, q string, jobs ...*NewJob) {
	t.Helper()
	for _, j := range jobs {
		if _, err := s.Publish(ctx, ns, q, []*NewJob{j}); err != nil {
			t.Fatal(err)
		}
	}
}
