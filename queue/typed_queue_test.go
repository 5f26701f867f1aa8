package queue_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

func TestProduceOptions(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{Tries: 4, TTR: 7 * time.Second})
		ctx := ctxT(t)

		id, err := q.Produce(ctx, &task{N: 1, Name: "a"}, 0,
			queue.WithPriority(9), queue.WithTTL(time.Hour), queue.WithTries(2),
			queue.WithAttributes(map[string]string{"k": "v"}), queue.WithAttributes(map[string]string{"k2": "v2"}))
		if err != nil {
			t.Fatalf("Produce: %v", err)
		}
		j, err := f.client.Get(ctx, f.ns, "q", id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != queue.StateReady || j.Priority != 9 || j.Tries != 2 || j.TTL != time.Hour || j.TTR != 7*time.Second ||
			j.Attributes["k"] != "v" || j.Attributes["k2"] != "v2" || string(j.Payload) != `{"n":1,"name":"a"}` {
			t.Fatalf("job = %+v", j)
		}

		// Defaults from the QueueConfig; a delay makes the job delayed.
		id, err = q.Produce(ctx, &task{N: 2}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if j, _ = f.client.Get(ctx, f.ns, "q", id); j.State != queue.StateDelayed || j.Tries != 4 || time.Until(j.DueAt) < 59*time.Minute {
			t.Fatalf("delayed job = %+v", j)
		}

		at := time.Now().Add(30 * time.Minute).Truncate(time.Millisecond)
		id, err = q.Produce(ctx, &task{N: 3}, 0, queue.WithRunAt(at), queue.WithTTR(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if j, _ = f.client.Get(ctx, f.ns, "q", id); !j.DueAt.Equal(at) || j.TTR != time.Second {
			t.Fatalf("run-at job = %+v, want due %s", j, at)
		}

		first, err := q.Produce(ctx, &task{N: 4}, 0, queue.WithUniqueKey("once", time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		again, err := q.Produce(ctx, &task{N: 5}, 0, queue.WithUniqueKey("once", time.Minute))
		if err != nil || again != first {
			t.Fatalf("second unique produce = %q, %v; want the first id %q", again, err, first)
		}

		// Validation errors name the field; one bad job of a batch adds nothing.
		if _, err := q.Produce(ctx, &task{}, 0, queue.WithPriority(300)); !errors.Is(err, sluice.ErrInvalid) {
			t.Fatalf("priority 300: %v", err)
		}
		if _, err := q.Produce(ctx, nil, 0); !errors.Is(err, sluice.ErrInvalid) {
			t.Fatalf("nil payload: %v", err)
		}
		before := f.stats(t, "q").Published
		_, err = q.ProduceMany(ctx, []*task{{N: 1}, nil}, 0)
		var v *sluice.FieldError
		if !errors.As(err, &v) || v.Field != "jobs[1].payload" {
			t.Fatalf("ProduceMany with a nil payload: %v", err)
		}
		if f.stats(t, "q").Published != before {
			t.Fatal("a failed ProduceMany published jobs")
		}
	})
}

func TestProduceManyKeepsOrder(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{})
		ids := produceN(t, q, 25, queue.WithPriority(3))
		if len(ids) != 25 || !slices.IsSorted(ids) {
			t.Fatalf("ids = %v", ids)
		}
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 25})
		for i, d := range ds {
			if d.ID != ids[i] || d.Priority != 3 {
				t.Fatalf("delivery %d = %s (priority %d), want %s", i, d.ID, d.Priority, ids[i])
			}
		}
	})
}

// b64Codec is a Codec of its own: base64 of the name.
type b64Codec struct{}

func (b64Codec) Marshal(v any) ([]byte, error) {
	return []byte(base64.StdEncoding.EncodeToString([]byte(v.(*task).Name))), nil
}

func (b64Codec) Unmarshal(data []byte, v any) error {
	b, err := base64.StdEncoding.DecodeString(string(data))
	v.(*task).Name = string(b)
	return err
}

func TestQueueCodecIsPluggable(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{Codec: b64Codec{}})
	id, err := q.Produce(ctxT(t), &task{Name: "hi"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := f.client.Get(ctxT(t), f.ns, "q", id); string(j.Payload) != "aGk=" {
		t.Fatalf("payload = %q", j.Payload)
	}
	got := make(chan string, 1)
	stop := runConsumer(t, q, func(ctx context.Context, v *task) error {
		got <- v.Name
		return nil
	}, queue.ConsumeConfig{})
	if name := <-got; name != "hi" {
		t.Fatalf("decoded %q", name)
	}
	stop()
}

func TestNewQueueValidates(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	if _, err := queue.NewQueue[task](nil, "ns", "q", queue.QueueConfig{}); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := queue.NewQueue[task](f.client, "ns", "bad name", queue.QueueConfig{}); !errors.Is(err, sluice.ErrInvalid) {
		t.Errorf("bad queue name: %v", err)
	}
	if _, err := queue.NewQueue[task](f.client, "ns", "q", queue.QueueConfig{Tries: -1}); err == nil {
		t.Error("negative tries accepted")
	}
	q := newTyped(t, f, queue.QueueConfig{})
	if q.Namespace() != f.ns || q.Name() != "q" || q.Client() != f.client {
		t.Errorf("accessors = %s %s %p", q.Namespace(), q.Name(), q.Client())
	}
}

func TestQueueDeadLetterTools(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		q := newTyped(t, f, queue.QueueConfig{Tries: 1})
		ctx := ctxT(t)
		ids := produceN(t, q, 5)
		f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte("not json"), Tries: 1})
		for _, d := range f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 10}) {
			if _, err := f.client.Nack(ctx, queue.NackParams{Namespace: d.Namespace, Queue: d.Queue, ID: d.ID, Delivery: d.Delivery, Error: "e"}); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := q.DeadSize(ctx); err != nil || n != 6 {
			t.Fatalf("DeadSize = %d, %v", n, err)
		}
		page, err := q.DeadList(ctx, 4, "")
		if err != nil || len(page.Jobs) != 4 || page.Total != 6 || page.NextCursor == "" {
			t.Fatalf("first page = %+v, %v", page, err)
		}
		for i, j := range page.Jobs {
			if j.Value == nil || j.Value.N != i || j.DecodeErr != nil || j.LastError != "e" {
				t.Fatalf("dead job %d = %+v", i, j)
			}
		}
		page, err = q.DeadList(ctx, 4, page.NextCursor)
		if err != nil || len(page.Jobs) != 2 || page.NextCursor != "" || page.Jobs[1].DecodeErr == nil || page.Jobs[1].Value != nil {
			t.Fatalf("second page = %+v, %v", page, err)
		}

		moved, err := q.DeadRespawn(ctx, ids[0], ids[1], "01NOTADEADJOB000000000000")
		if err != nil || !slices.Equal(moved, ids[:2]) {
			t.Fatalf("DeadRespawn = %v, %v", moved, err)
		}
		if n, err := q.DeadDelete(ctx, ids[2]); err != nil || n != 1 {
			t.Fatalf("DeadDelete = %d, %v", n, err)
		}
		if n, err := q.DeadRespawnAll(ctx); err != nil || n != 3 {
			t.Fatalf("DeadRespawnAll = %d, %v", n, err)
		}
		if s := f.stats(t, "q"); s.Ready != 5 || s.Dead != 0 {
			t.Fatalf("stats after respawn = %+v", s)
		}
		// Back to the dead letter, then purge it.
		for _, d := range f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 10}) {
			if _, err := f.client.Nack(ctx, queue.NackParams{Namespace: d.Namespace, Queue: d.Queue, ID: d.ID, Delivery: d.Delivery, NoRetry: true}); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := q.DeadPurge(ctx); err != nil || n != 5 {
			t.Fatalf("DeadPurge = %d, %v", n, err)
		}
		if n, _ := q.DeadSize(ctx); n != 0 {
			t.Fatalf("dead letter holds %d after purge", n)
		}
		if s, err := q.Stats(ctx); err != nil || s.Published != 6 {
			t.Fatalf("Stats = %+v, %v", s, err)
		}
	})
}

func TestConcurrentProducesShareRoundTrips(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := setup(t, env, queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{})
	if _, err := q.Produce(ctxT(t), &task{N: -1}, 0); err != nil { // registers the queue, loads scripts
		t.Fatal(err)
	}
	rt := &roundTrips{}
	env.Client.AddHook(rt)
	const producers, each = 50, 40
	ids := make([][]string, producers)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				id, err := q.Produce(ctxT(t), &task{N: p*each + i}, 0)
				if err != nil {
					t.Errorf("Produce: %v", err)
					return
				}
				ids[p] = append(ids[p], id)
			}
		})
	}
	wg.Wait()
	trips := rt.n.Load()
	seen := map[string]bool{}
	for _, list := range ids {
		for _, id := range list {
			if id == "" || seen[id] {
				t.Fatalf("id %q empty or returned twice", id)
			}
			seen[id] = true
		}
	}
	const n = producers * each
	t.Logf("%d concurrent Produce calls in %d round trips", n, trips)
	if len(seen) != n || f.stats(t, "q").Published != n+1 {
		t.Fatalf("%d ids, stats %+v", len(seen), f.stats(t, "q"))
	}
	if trips >= n/2 {
		t.Fatalf("%d round trips for %d concurrent produces: they were not coalesced", trips, n)
	}
	// The payloads arrived whole, each once.
	got := map[int]bool{}
	for len(got) < n+1 {
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 1000})
		if len(ds) == 0 {
			t.Fatalf("consumed %d of %d jobs", len(got), n+1)
		}
		for _, d := range ds {
			var v task
			if err := json.Unmarshal(d.Payload, &v); err != nil || got[v.N] {
				t.Fatalf("payload %s: %v (duplicate %v)", d.Payload, err, got[v.N])
			}
			got[v.N] = true
		}
	}
}
