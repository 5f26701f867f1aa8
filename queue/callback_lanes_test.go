package queue_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// dueLanes is the queues of f's namespace whose callback lane the due index has due.
func (f *fixture) dueLanes(t *testing.T) []string {
	t.Helper()
	due, err := f.client.DueCallbackLanes(ctxT(t), 1000)
	if err != nil {
		t.Fatalf("DueCallbackLanes: %v", err)
	}
	var out []string
	for _, r := range due.Lanes {
		if r.Namespace == f.ns {
			out = append(out, r.Queue)
		}
	}
	slices.Sort(out)
	return out
}

// The callback lanes' due index holds a lane while it has work for a deliverer, written by the
// scripts that make the work (on a Cluster in the shard of the queue's slot): a callback job on the
// lane is due at once, a delayed one at its time, a plain job never; a visit that leases the
// lane's jobs moves the entry to their lease end, and a visit that finds nothing removes it. A
// paused queue's lane leaves the index until Resume, which marks it due again.
func TestCallbackLanesDueIndex(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		cb := &queue.Callback{URL: "https://example.com/hook"}
		f.publish(t, queue.PublishParams{Queue: "ready", Callback: cb})
		f.publish(t, queue.PublishParams{Queue: "later", Callback: cb, Delay: time.Hour})
		f.publish(t, queue.PublishParams{Queue: "plain"})
		if err := f.client.Pause(ctx, f.ns, "paused"); err != nil {
			t.Fatal(err)
		}
		f.publish(t, queue.PublishParams{Queue: "paused", Callback: cb})
		if got := f.dueLanes(t); !slices.Equal(got, []string{"paused", "ready"}) {
			t.Fatalf("due lanes %v, want paused and ready", got)
		}

		if b := f.consumeCallbacks(t, "ready", 10); len(b.Jobs) != 1 {
			t.Fatalf("leased %+v, want the ready lane's job", b)
		}
		if b := f.consumeCallbacks(t, "paused", 10); len(b.Jobs) != 0 {
			t.Fatalf("a paused lane leased %+v", b)
		}
		if got := f.dueLanes(t); len(got) != 0 {
			t.Fatalf("due lanes %v after the visits, want none (a lease running, a queue paused)", got)
		}
		if err := f.client.Resume(ctx, f.ns, "paused"); err != nil {
			t.Fatal(err)
		}
		if got := f.dueLanes(t); !slices.Equal(got, []string{"paused"}) {
			t.Fatalf("due lanes %v after Resume, want paused", got)
		}
		if b := f.consumeCallbacks(t, "paused", 10); len(b.Jobs) != 1 {
			t.Fatalf("after Resume leased %+v, want its job", b)
		}

		// A lane whose visit failed is put off: it is not due until the time it was moved to.
		f.publish(t, queue.PublishParams{Queue: "failing", Callback: cb})
		due, err := f.client.DueCallbackLanes(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		lane := queue.QueueRef{Namespace: f.ns, Queue: "failing"}
		if err := f.client.DeferCallbackLane(ctx, lane, due.Now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := f.dueLanes(t); len(got) != 0 {
			t.Fatalf("due lanes %v, want the deferred lane put off", got)
		}
	})
}

// The sweep marks every lane of the callback registry due once (lanes stored without the index
// are found so), then leaves a mark: a sweep from the start finds nothing to do until it lapses.
func TestSweepCallbackLanesMarksTheRegistryOnce(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		cb := &queue.Callback{URL: "https://example.com/hook"}
		for _, q := range []string{"a", "b", "c"} {
			f.publish(t, queue.PublishParams{Queue: q, Callback: cb, Delay: time.Hour})
		}
		if got := f.dueLanes(t); len(got) != 0 {
			t.Fatalf("due lanes %v, want none before the sweep", got)
		}
		// On a Cluster, as an older version left it: no lane's hash slot announced in the slots
		// in use of the lanes' index (a read of the index then visits every shard).
		slots := env.Prefix + ":callbacks:due:slots"
		if err := env.Client.Del(ctx, slots).Err(); err != nil {
			t.Fatal(err)
		}
		marked := 0
		for cursor, first := uint64(0), true; first || cursor != 0; first = false {
			next, n, err := f.client.SweepCallbackLanes(ctx, cursor, 2, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			cursor, marked = next, marked+n
		}
		if got := f.dueLanes(t); marked != 3 || !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("the sweep marked %d lanes, due %v; want a, b and c", marked, got)
		}
		if next, n, err := f.client.SweepCallbackLanes(ctx, 0, 2, time.Hour); err != nil || next != 0 || n != 0 {
			t.Fatalf("a sweep after a complete one = %d, %d, %v; want nothing done", next, n, err)
		}
		if env.Cluster {
			// The sweep announced the lanes' slots and marked the set complete: from now on a read
			// visits only the shards of the slots in use.
			members, err := env.Client.SMembers(ctx, slots).Result()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(members, "complete") || len(members) < 2 || len(members) > 4 {
				t.Fatalf("slots in use after the sweep: %v, want 1 to 3 slots and the mark", members)
			}
		}
		// A lane registered after that is read too: its slot is announced where its queue is
		// registered for callbacks, before its first callback job is written.
		f.publish(t, queue.PublishParams{Queue: "d", Callback: cb})
		if got := f.dueLanes(t); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
			t.Fatalf("due lanes %v, want a, b, c and the new lane d", got)
		}
	})
}
