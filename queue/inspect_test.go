package queue_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

func TestGetPositionAndPeek(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		a := f.publish(t, queue.PublishParams{Queue: "q", Priority: 1})
		b := f.publish(t, queue.PublishParams{Queue: "q", Priority: 1})
		c := f.publish(t, queue.PublishParams{Queue: "q", Priority: 9})
		d := f.publish(t, queue.PublishParams{Queue: "q", Delay: time.Hour})
		for id, want := range map[string]int{c: 0, a: 1, b: 2, d: -1} {
			j, err := f.client.Get(ctx, f.ns, "q", id)
			if err != nil || j.Position != want {
				t.Fatalf("position of %s = %d (%v), want %d", id, j.Position, err, want)
			}
		}
		head, err := f.client.Peek(ctx, f.ns, "q")
		if err != nil || head.ID != c || head.State != queue.StateReady {
			t.Fatalf("Peek = %+v, %v", head, err)
		}
		if s := f.stats(t, "q"); s.Ready != 3 || s.Consumed != 0 {
			t.Fatalf("Peek leased something: %+v", s)
		}
		if _, err := f.client.Peek(ctx, f.ns, "empty"); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("Peek of an empty queue = %v", err)
		}
		if _, err := f.client.Get(ctx, f.ns, "q", "missing"); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("Get of a missing job = %v", err)
		}
	})
}

// A job past its ttl is gone (docs/job-states.md): Get answers not found for it at once, before
// housekeeping removes it, and the position of a live job leaves out the ones ahead of it. A leased
// job is not taken from its consumer: it shows while its lease runs, not once its lease has ended.
func TestGetJobPastItsTTLIsNotFound(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		const ttl = 500 * time.Millisecond
		leased := f.publish(t, queue.PublishParams{Queue: "q", TTL: ttl})
		if ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, TTR: time.Minute}); len(ds) != 1 || ds[0].ID != leased {
			t.Fatalf("consume = %v, want %s", deliveryIDs(ds), leased)
		}
		lapsed := f.publish(t, queue.PublishParams{Queue: "q", TTL: ttl})
		if ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, TTR: 50 * time.Millisecond}); len(ds) != 1 || ds[0].ID != lapsed {
			t.Fatalf("consume = %v, want %s", deliveryIDs(ds), lapsed)
		}
		ahead := f.publish(t, queue.PublishParams{Queue: "q", TTL: ttl})
		higher := f.publish(t, queue.PublishParams{Queue: "q", Priority: 5, TTL: ttl})
		// Due before its ttl passes, but nothing moves it to ready before then.
		delayed := f.publish(t, queue.PublishParams{Queue: "q", Delay: 100 * time.Millisecond, TTL: ttl})
		live := f.publish(t, queue.PublishParams{Queue: "q"})
		behind := f.publish(t, queue.PublishParams{Queue: "q", TTL: ttl})

		gone := []string{ahead, higher, delayed, behind, lapsed}
		testwait.Until(t, time.Minute, "Get to stop finding the jobs past their ttl", func() bool {
			for _, id := range gone {
				if _, err := f.client.Get(ctx, f.ns, "q", id); !errors.Is(err, queue.ErrNotFound) {
					return false
				}
			}
			return true
		})
		if j, err := f.client.Get(ctx, f.ns, "q", leased); err != nil || j.State != queue.StateLeased {
			t.Fatalf("Get of a leased job past its ttl = %+v, %v; want it leased", j, err)
		}
		if j, err := f.client.Get(ctx, f.ns, "q", live); err != nil || j.Position != 0 {
			t.Fatalf("Get of the live job = %+v, %v; want position 0", j, err)
		}
		if head, err := f.client.Peek(ctx, f.ns, "q"); err != nil || head.ID != live {
			t.Fatalf("Peek = %+v, %v; want %s", head, err, live)
		}
		// Get only reads: the jobs are removed, and counted, by the next housekeeping.
		if s := f.stats(t, "q"); s.Expired != 0 {
			t.Fatalf("stats before housekeeping = %+v", s)
		}
		if d := f.consumeOne(t, "q"); d.ID != live {
			t.Fatalf("consumed %s, want %s", d.ID, live)
		}
		if s := f.stats(t, "q"); s.Expired != int64(len(gone)) || s.Ready != 0 || s.Delayed != 0 || s.Leased != 2 {
			t.Fatalf("stats after housekeeping = %+v", s)
		}
	})
}

// Peek's position, like Get's, is the number of ready jobs a consumer gets before the job: the jobs
// Peek passes over because their ttl has passed are not among them, and ready jobs of a higher
// priority are.
func TestPeekPositionCountsLiveJobsAhead(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const ttl = 300 * time.Millisecond
		// peekBoth peeks q and checks that Get gives the peeked job the same position.
		peekBoth := func(t *testing.T, f *fixture, q string) *queue.Job {
			t.Helper()
			head, err := f.client.Peek(ctx, f.ns, q)
			if err != nil {
				t.Fatalf("Peek(%s): %v", q, err)
			}
			j, err := f.client.Get(ctx, f.ns, q, head.ID)
			if err != nil || j.Position != head.Position {
				t.Fatalf("Get(%s) = %+v, %v; want position %d as Peek says", head.ID, j, err, head.Position)
			}
			return head
		}
		waitGone := func(t *testing.T, f *fixture, q, id string) {
			t.Helper()
			testwait.Until(t, time.Minute, "the ttl to pass", func() bool {
				_, err := f.client.Get(ctx, f.ns, q, id)
				return errors.Is(err, queue.ErrNotFound)
			})
		}

		// Jobs past their ttl ahead of the next live one, in a higher priority and in its own.
		f := setup(t, env, queue.Config{})
		f.publish(t, queue.PublishParams{Queue: "q", Priority: 5, TTL: ttl})
		f.publish(t, queue.PublishParams{Queue: "q", Priority: 1, TTL: ttl})
		last := f.publish(t, queue.PublishParams{Queue: "q", Priority: 1, TTL: ttl})
		live := f.publish(t, queue.PublishParams{Queue: "q", Priority: 1})
		f.publish(t, queue.PublishParams{Queue: "q", Priority: 1})
		waitGone(t, f, "q", last)
		if head := peekBoth(t, f, "q"); head.ID != live || head.Position != 0 {
			t.Fatalf("Peek = %s at %d, want %s at 0", head.ID, head.Position, live)
		}

		// A higher priority whose first Batch jobs are past their ttl but that holds a live one
		// beyond them: Peek does not look that far, so the job it answers has one job ahead.
		f = setup(t, env, queue.Config{Batch: 2})
		f.publish(t, queue.PublishParams{Queue: "b", Priority: 5, TTL: ttl})
		last = f.publish(t, queue.PublishParams{Queue: "b", Priority: 5, TTL: ttl})
		hidden := f.publish(t, queue.PublishParams{Queue: "b", Priority: 5})
		low := f.publish(t, queue.PublishParams{Queue: "b", Priority: 1})
		waitGone(t, f, "b", last)
		if head := peekBoth(t, f, "b"); head.ID != low || head.Position != 1 {
			t.Fatalf("Peek = %s at %d, want %s at 1", head.ID, head.Position, low)
		}
		if d := f.consumeOne(t, "b"); d.ID != hidden {
			t.Fatalf("consumed %s, want %s, the job counted ahead", d.ID, hidden)
		}
		if head := peekBoth(t, f, "b"); head.ID != low || head.Position != 0 {
			t.Fatalf("Peek = %s at %d, want %s at 0", head.ID, head.Position, low)
		}
	})
}

func TestGetShowsEveryField(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	id := f.publish(t, queue.PublishParams{
		Queue: "q", Payload: []byte("p"), Priority: 7, Tries: 4, TTL: time.Hour, TTR: 5 * time.Second,
		Backoff: queue.Backoff{Base: time.Second, Max: time.Minute}, UniqueKey: "u", Attributes: map[string]string{"k": "v"},
	})
	j, err := f.client.Get(ctxT(t), f.ns, "q", id)
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != id || j.Namespace != f.ns || j.Queue != "q" || string(j.Payload) != "p" || j.Priority != 7 ||
		j.Tries != 4 || j.RemainingTries != 4 || j.Deliveries != 0 || j.TTL != time.Hour || j.TTR != 5*time.Second ||
		j.Backoff != (queue.Backoff{Base: time.Second, Max: time.Minute}) || j.UniqueKey != "u" || j.Attributes["k"] != "v" ||
		j.ExpiresAt.Sub(j.PublishedAt) != time.Hour || !j.DueAt.Equal(j.PublishedAt) || !j.LeaseUntil.IsZero() {
		t.Fatalf("Get = %+v", j)
	}
}

func TestPurgeRemovesEveryState(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		f.killJobs(t, "q", 1)
		f.publish(t, queue.PublishParams{Queue: "q", Priority: 3})
		f.publish(t, queue.PublishParams{Queue: "q", Priority: 4})
		f.publish(t, queue.PublishParams{Queue: "q", Delay: time.Hour, TTL: 2 * time.Hour})
		leased := f.consumeOne(t, "q")
		n, err := f.client.Purge(ctx, f.ns, "q")
		if err != nil || n != 4 {
			t.Fatalf("Purge = %d, %v; want 4", n, err)
		}
		s := f.stats(t, "q")
		if s.Ready+s.Delayed+s.Leased+s.Dead != 0 || s.Purged != 4 || s.Published != 4 {
			t.Fatalf("after purge: %+v", s)
		}
		if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: leased.ID, Delivery: leased.Delivery}); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("ack after purge = %v", err)
		}
		// The queue still works.
		f.publish(t, queue.PublishParams{Queue: "q"})
		f.ack(t, f.consumeOne(t, "q"))
	})
}

func TestDeleteQueue(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	f.publish(t, queue.PublishParams{Queue: "gone"})
	f.publish(t, queue.PublishParams{Queue: "kept"})
	if n, err := f.client.DeleteQueue(ctx, f.ns, "gone"); err != nil || n != 1 {
		t.Fatalf("DeleteQueue = %d, %v", n, err)
	}
	qs, _ := f.client.Queues(ctx, f.ns)
	if strings.Join(qs, ",") != "kept" {
		t.Fatalf("Queues after delete = %v", qs)
	}
	for q, want := range map[string]bool{"gone": false, "kept": true, "never": false} {
		if ok, err := f.client.QueueExists(ctx, f.ns, q); err != nil || ok != want {
			t.Fatalf("QueueExists(%s) = %v, %v; want %v", q, ok, err, want)
		}
	}
	if s := f.stats(t, "gone"); s.Published != 0 || s.Ready != 0 {
		t.Fatalf("deleted queue keeps state: %+v", s)
	}
	ns, err := f.client.Namespaces(ctx)
	if err != nil || len(ns) != 1 || ns[0] != f.ns {
		t.Fatalf("Namespaces = %v, %v", ns, err)
	}
}

func TestStatsManyAndCounters(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		f.publish(t, queue.PublishParams{Queue: "a"})
		f.publish(t, queue.PublishParams{Queue: "b", Delay: time.Hour})
		f.killJobs(t, "c", 2)
		all, err := f.client.StatsMany(ctxT(t), f.ns, []string{"a", "b", "c"})
		if err != nil {
			t.Fatal(err)
		}
		if all[0].Ready != 1 || all[1].Delayed != 1 || all[2].Dead != 2 || all[2].Nacked != 2 || all[2].DeadLettered != 2 {
			t.Fatalf("StatsMany = %+v", all)
		}
	})
}

func TestNewClientValidatesConfig(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	if _, err := queue.NewClient(env.Client, queue.Config{Prefix: "bad:prefix"}); err == nil || !strings.Contains(err.Error(), "Prefix") {
		t.Fatalf("bad prefix: %v", err)
	}
	if _, err := queue.NewClient(env.Client, queue.Config{DefaultTries: -1}); err == nil || !strings.Contains(err.Error(), "DefaultTries") {
		t.Fatalf("negative tries: %v", err)
	}
	if _, err := queue.NewClient(nil, queue.Config{}); err == nil {
		t.Fatal("nil client accepted")
	}
}

func TestDeleteNamespace(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		f.publish(t, queue.PublishParams{Queue: "a"})
		f.publish(t, queue.PublishParams{Queue: "b", Delay: time.Hour})
		f.publish(t, queue.PublishParams{Namespace: "other", Queue: "a"})
		queues, jobs, err := f.client.DeleteNamespace(ctx, f.ns)
		if err != nil || queues != 2 || jobs != 2 {
			t.Fatalf("DeleteNamespace = %d queues, %d jobs, %v; want 2, 2", queues, jobs, err)
		}
		if ns, _ := f.client.Namespaces(ctx); strings.Join(ns, ",") != "other" {
			t.Fatalf("Namespaces after delete = %v, want [other]", ns)
		}
		if qs, _ := f.client.Queues(ctx, f.ns); len(qs) != 0 {
			t.Fatalf("Queues after delete = %v", qs)
		}
		if s := f.stats(t, "b"); s.Delayed != 0 {
			t.Fatalf("a deleted namespace keeps jobs: %+v", s)
		}
	})
}

func TestPending(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		low := f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte("low")})
		high := f.publish(t, queue.PublishParams{Queue: "q", Priority: 5, Payload: []byte("high")})
		later := f.publish(t, queue.PublishParams{Queue: "q", Delay: time.Hour})
		f.publish(t, queue.PublishParams{Queue: "q", Delay: 2 * time.Hour})
		leased := f.publish(t, queue.PublishParams{Queue: "q", Priority: 9})
		if d := f.consumeOne(t, "q"); d.ID != leased {
			t.Fatalf("consumed %s, want %s", d.ID, leased)
		}
		acked := f.publish(t, queue.PublishParams{Queue: "other"})
		f.ack(t, f.consumeOne(t, "other"))

		res, err := f.client.Pending(ctx, queue.PendingParams{Namespace: f.ns, Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range res.Jobs {
			got = append(got, j.ID+":"+string(j.State)+":"+strconv.Itoa(j.Position))
		}
		want := []string{high + ":ready:0", low + ":ready:1", later + ":delayed:-1"}
		if res.Total != 5 || len(res.Jobs) != 5 || !slices.Equal(got[:3], want) || res.Jobs[4].ID != leased ||
			res.Jobs[4].State != queue.StateLeased || res.Jobs[4].Deliveries != 1 {
			t.Fatalf("Pending = total %d %v, want total 5 starting %v and ending with leased %s", res.Total, got, want, leased)
		}
		if string(res.Jobs[0].Payload) != "high" {
			t.Fatalf("payload %q", res.Jobs[0].Payload)
		}

		res, err = f.client.Pending(ctx, queue.PendingParams{Namespace: f.ns, Queue: "q", Limit: 2})
		if err != nil || res.Total != 5 || len(res.Jobs) != 2 || res.Jobs[0].ID != high {
			t.Fatalf("Pending(limit 2) = %+v, %v", res, err)
		}
		res, err = f.client.Pending(ctx, queue.PendingParams{Namespace: f.ns, Queue: "other"})
		if err != nil || res.Total != 0 || len(res.Jobs) != 0 {
			t.Fatalf("Pending of a queue whose one job %s was acked = %+v, %v", acked, res, err)
		}
		var verr *sluice.FieldError
		if _, err := f.client.Pending(ctx, queue.PendingParams{Namespace: f.ns, Queue: "q", Limit: 1001}); !errors.As(err, &verr) || verr.Field != "limit" {
			t.Fatalf("Pending(limit 1001) = %v, want a FieldError on limit", err)
		}
	})
}

// Jobs past their ttl that wait for housekeeping are gone for Pending, as for Get.
func TestPendingLeavesOutExpired(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	f.publish(t, queue.PublishParams{Queue: "q", TTL: time.Millisecond})
	live := f.publish(t, queue.PublishParams{Queue: "q"})
	testwait.UntilNil(t, time.Minute, func() error {
		res, err := f.client.Pending(ctx, queue.PendingParams{Namespace: f.ns, Queue: "q"})
		if err != nil {
			return err
		}
		if len(res.Jobs) != 1 || res.Jobs[0].ID != live || res.Jobs[0].Position != 0 {
			return fmt.Errorf("Pending still shows the job past its ttl: %+v", res.Jobs)
		}
		return nil
	})
}
