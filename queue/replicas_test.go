package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// With no replica to acknowledge, a publish that asks for one fails with ErrNotReplicated after
// the timeout, and the job is on the primary all the same (on every master of a cluster).
func TestReplicaAcksWithoutReplica(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{ReplicaAcks: 1, ReplicaAckTimeout: 20 * time.Millisecond})
		_, err := f.client.Publish(ctxT(t), queue.PublishParams{Namespace: f.ns, Queue: "q", Payload: []byte("x")})
		if !errors.Is(err, queue.ErrNotReplicated) {
			t.Fatalf("Publish error = %v, want ErrNotReplicated", err)
		}
		var many []queue.PublishParams
		for _, q := range []string{"a", "b", "c", "d", "e", "f"} {
			many = append(many, queue.PublishParams{Namespace: f.ns, Queue: q, Payload: []byte(q)})
		}
		if _, err := f.client.PublishMany(ctxT(t), many); !errors.Is(err, queue.ErrNotReplicated) {
			t.Fatalf("PublishMany error = %v, want ErrNotReplicated", err)
		}
		for _, q := range []string{"q", "a", "f"} {
			if s := f.stats(t, q); s.Ready != 1 {
				t.Fatalf("queue %s holds %d ready jobs, want 1", q, s.Ready)
			}
		}
	})
}

func TestReplicaAcksConfig(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	if _, err := queue.NewClient(env.Client, queue.Config{ReplicaAcks: -1}); err == nil {
		t.Fatal("NewClient accepted ReplicaAcks -1")
	}
}
