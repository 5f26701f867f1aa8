package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

func TestLeaseExpiryRedeliversThenDeadLetters(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		id := f.publish(t, queue.PublishParams{Queue: "q", Tries: 2, TTR: 50 * time.Millisecond})
		first := f.consumeOne(t, "q")
		if first.Delivery != 1 || first.RemainingTries != 1 {
			t.Fatalf("first delivery = %+v", first)
		}
		// The consumer "crashes": no ack. The blocked consume wakes when the lease ends.
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Timeout: 10 * time.Second})
		if len(ds) != 1 || ds[0].ID != id || ds[0].Delivery != 2 || ds[0].RemainingTries != 0 {
			t.Fatalf("redelivery = %+v", ds)
		}
		// The stale delivery cannot ack the new one's lease, and changes nothing.
		err := f.client.Ack(ctxT(t), queue.AckParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: 1})
		if !errors.Is(err, queue.ErrLeaseLost) {
			t.Fatalf("stale ack = %v, want ErrLeaseLost", err)
		}
		if j, _ := f.client.Get(ctxT(t), f.ns, "q", id); j.State != queue.StateLeased || j.Deliveries != 2 {
			t.Fatalf("stale ack changed the job: %+v", j)
		}
		// The last try's lease ends too: dead letter.
		testwait.Until(t, time.Minute, "the job to go dead", func() bool {
			if _, err := f.client.MaintainOnce(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			n, _ := f.client.DeadSize(ctxT(t), f.ns, "q")
			return n == 1
		})
		j, err := f.client.Get(ctxT(t), f.ns, "q", id)
		if err != nil || j.State != queue.StateDead || j.RemainingTries != 0 || j.LastError != "lease expired" || j.FinishedAt.IsZero() {
			t.Fatalf("dead job = %+v, %v", j, err)
		}
		s := f.stats(t, "q")
		if s.Consumed != 2 || s.Retried != 1 || s.DeadLettered != 1 || s.Leased != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestAckAfterLeaseEndedIsLost(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		f.publish(t, queue.PublishParams{Queue: "q", TTR: 20 * time.Millisecond})
		d := f.consumeOne(t, "q")
		testwait.Until(t, time.Minute, "the lease to end", func() bool { return time.Now().After(d.LeaseUntil.Add(10 * time.Millisecond)) })
		// Nobody reaped the lease yet: it must still be refused.
		for name, call := range map[string]func() error{
			"ack": func() error {
				return f.client.Ack(ctxT(t), queue.AckParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery})
			},
			"nack": func() error {
				_, err := f.client.Nack(ctxT(t), queue.NackParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery})
				return err
			},
			"touch": func() error {
				_, err := f.client.Touch(ctxT(t), queue.TouchParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery})
				return err
			},
			"release": func() error {
				return f.client.Release(ctxT(t), queue.ReleaseParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery})
			},
		} {
			if err := call(); !errors.Is(err, queue.ErrLeaseLost) {
				t.Errorf("%s after the lease ended = %v, want ErrLeaseLost", name, err)
			}
		}
		if s := f.stats(t, "q"); s.Acked != 0 || s.Nacked != 0 {
			t.Fatalf("a refused call changed counters: %+v", s)
		}
	})
}

func TestNack(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "q", Tries: 3})

		// Without a delay (and no backoff policy): ready again at once, error kept.
		d := f.consumeOne(t, "q")
		out, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery, Error: "boom"})
		if err != nil || out != queue.NackRetried {
			t.Fatalf("nack = %s, %v", out, err)
		}
		j, _ := f.client.Get(ctx, f.ns, "q", id)
		if j.State != queue.StateReady || j.LastError != "boom" || j.RemainingTries != 2 {
			t.Fatalf("after nack: %+v", j)
		}

		// With a delay: delayed for that long.
		d = f.consumeOne(t, "q")
		delay := time.Hour
		if _, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery, RetryAfter: &delay}); err != nil {
			t.Fatal(err)
		}
		j, _ = f.client.Get(ctx, f.ns, "q", id)
		if j.State != queue.StateDelayed || time.Until(j.DueAt) < 59*time.Minute {
			t.Fatalf("after delayed nack: %+v", j)
		}
		if ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}}); len(ds) != 0 {
			t.Fatal("a job nacked with a delay came back at once")
		}
		s := f.stats(t, "q")
		if s.Nacked != 2 || s.Retried != 2 || s.Delayed != 1 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestNackLastTryAndNoRetryDeadLetter(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	last := f.publish(t, queue.PublishParams{Queue: "q", Tries: 1})
	d := f.consumeOne(t, "q")
	out, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: last, Delivery: d.Delivery, Error: "final"})
	if err != nil || out != queue.NackDead {
		t.Fatalf("nack on the last try = %s, %v", out, err)
	}
	skip := f.publish(t, queue.PublishParams{Queue: "q", Tries: 5})
	d = f.consumeOne(t, "q")
	out, err = f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: skip, Delivery: d.Delivery, Error: "bad input", NoRetry: true})
	if err != nil || out != queue.NackDead {
		t.Fatalf("nack NoRetry = %s, %v", out, err)
	}
	page, err := f.client.DeadList(ctx, queue.DeadListParams{Namespace: f.ns, Queue: "q"})
	if err != nil || len(page.Jobs) != 2 || page.Jobs[0].ID != last || page.Jobs[0].LastError != "final" || page.Jobs[1].LastError != "bad input" {
		t.Fatalf("dead letter = %+v, %v", page, err)
	}
}

func TestBackoffPolicyDelaysRetries(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "q", Tries: 4, Backoff: queue.Backoff{Base: 10 * time.Second, Max: 25 * time.Second}})
		for _, want := range []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second} {
			d := f.consumeOne(t, "q")
			if _, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery}); err != nil {
				t.Fatal(err)
			}
			j, _ := f.client.Get(ctx, f.ns, "q", id)
			got := j.DueAt.Sub(d.LeaseUntil.Add(-30 * time.Second)) // lease started at LeaseUntil - default TTR
			if j.State != queue.StateDelayed || got < want || got > want+2*time.Second {
				t.Fatalf("retry %d: due in %s, want %s (job %+v)", d.Delivery, got, want, j)
			}
			// Make the retry due now (a raw edit of the schedule) so the next try can be consumed.
			f.env.Client.ZAdd(ctx, f.env.Prefix+":{ns:q}:delayed", redisZ(0, id))
		}
	})
}

func TestTouchExtendsTheLease(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		id := f.publish(t, queue.PublishParams{Queue: "q", TTR: 100 * time.Millisecond})
		d := f.consumeOne(t, "q")
		until, err := f.client.Touch(ctxT(t), queue.TouchParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery, TTR: time.Minute})
		if err != nil || until.Sub(d.LeaseUntil) < 59*time.Second {
			t.Fatalf("Touch = %s, %v", until, err)
		}
		testwait.Until(t, time.Minute, "the original lease end to pass", func() bool { return time.Now().After(d.LeaseUntil.Add(50 * time.Millisecond)) })
		if _, err := f.client.MaintainOnce(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if err := f.client.Ack(ctxT(t), queue.AckParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery}); err != nil {
			t.Fatalf("ack within the extended lease: %v", err)
		}
	})
}

func TestReleaseGivesTheJobBackWithoutATry(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		id := f.publish(t, queue.PublishParams{Queue: "q", Tries: 2})
		other := f.publish(t, queue.PublishParams{Queue: "q", Tries: 2})
		d := f.consumeOne(t, "q")
		if err := f.client.Release(ctxT(t), queue.ReleaseParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery}); err != nil {
			t.Fatal(err)
		}
		// Back at the head, ahead of the job behind it, with its try returned.
		again := f.consumeOne(t, "q")
		if again.ID != id || again.RemainingTries != 1 || again.Delivery != 2 {
			t.Fatalf("after release got %+v (other job %s)", again, other)
		}
		if s := f.stats(t, "q"); s.Released != 1 || s.Nacked != 0 || s.Retried != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestAckWithResultKeepsIt(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte("in")})
		d := f.consumeOne(t, "q")
		if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery, Result: []byte(`{"ok":true}`)}); err != nil {
			t.Fatal(err)
		}
		j, err := f.client.Get(ctx, f.ns, "q", id)
		if err != nil || j.State != queue.StateDone || string(j.Result) != `{"ok":true}` || j.Payload != nil || j.FinishedAt.IsZero() {
			t.Fatalf("done job = %+v, %v", j, err)
		}
		if s := f.stats(t, "q"); s.Done != 1 || s.Acked != 1 {
			t.Fatalf("stats = %+v", s)
		}
		// Acking again is refused and changes nothing.
		if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery}); !errors.Is(err, queue.ErrLeaseLost) {
			t.Fatalf("second ack = %v, want ErrLeaseLost", err)
		}
	})
}

func TestResultsAreBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{MaxResults: 2})
	var ids []string
	for range 4 {
		ids = append(ids, f.publish(t, queue.PublishParams{Queue: "q"}))
	}
	for range 4 {
		d := f.consumeOne(t, "q")
		if err := f.client.Ack(ctxT(t), queue.AckParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery, Result: []byte("r")}); err != nil {
			t.Fatal(err)
		}
	}
	if s := f.stats(t, "q"); s.Done != 2 {
		t.Fatalf("kept %d results, want 2", s.Done)
	}
	if _, err := f.client.Get(ctxT(t), f.ns, "q", ids[0]); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("the oldest result should be trimmed: %v", err)
	}
	if j, err := f.client.Get(ctxT(t), f.ns, "q", ids[3]); err != nil || j.State != queue.StateDone {
		t.Fatalf("the newest result should stay: %+v, %v", j, err)
	}
}

func TestAckManyReportsEachAck(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		f.publish(t, queue.PublishParams{Queue: "a"})
		f.publish(t, queue.PublishParams{Queue: "b"})
		da, db := f.consumeOne(t, "a"), f.consumeOne(t, "b")
		errs, err := f.client.AckMany(ctxT(t), []queue.AckParams{
			{Namespace: f.ns, Queue: "a", ID: da.ID, Delivery: da.Delivery},
			{Namespace: f.ns, Queue: "b", ID: db.ID, Delivery: db.Delivery + 1},
			{Namespace: f.ns, Queue: "b", ID: "nope", Delivery: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		if errs[0] != nil || !errors.Is(errs[1], queue.ErrLeaseLost) || !errors.Is(errs[2], queue.ErrNotFound) {
			t.Fatalf("AckMany errors = %v", errs)
		}
	})
}

func TestDeleteInEveryState(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		ready := f.publish(t, queue.PublishParams{Queue: "q", UniqueKey: "u"})
		delayed := f.publish(t, queue.PublishParams{Queue: "q", Delay: time.Hour, TTL: 2 * time.Hour})
		leasedID := f.publish(t, queue.PublishParams{Queue: "l"})
		leased := f.consumeOne(t, "l")
		deadID := f.publish(t, queue.PublishParams{Queue: "d", Tries: 1})
		dd := f.consumeOne(t, "d")
		if _, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "d", ID: deadID, Delivery: dd.Delivery}); err != nil {
			t.Fatal(err)
		}
		for q, id := range map[string]string{"q": ready, "l": leasedID, "d": deadID} {
			if n, err := f.client.Delete(ctx, f.ns, q, id); err != nil || n != 1 {
				t.Fatalf("Delete(%s) = %d, %v", id, n, err)
			}
			if _, err := f.client.Get(ctx, f.ns, q, id); !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("deleted job %s still there", id)
			}
		}
		if n, _ := f.client.Delete(ctx, f.ns, "q", delayed, "missing"); n != 1 {
			t.Fatalf("Delete counted %d, want 1", n)
		}
		if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "l", ID: leased.ID, Delivery: leased.Delivery}); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("ack of a deleted job = %v, want ErrNotFound", err)
		}
		for _, q := range []string{"q", "l", "d"} {
			s := f.stats(t, q)
			if s.Ready+s.Delayed+s.Leased+s.Dead != 0 {
				t.Fatalf("queue %s still has jobs: %+v", q, s)
			}
		}
		// The unique key of the deleted job is free.
		if r, err := f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: "q", UniqueKey: "u"}); err != nil || r.Duplicate {
			t.Fatalf("publish after delete = %+v, %v", r, err)
		}
	})
}

// TestFinishInEveryState: Finish (lmstfy's ack) acks a job under a running lease and deletes a
// job in any other state, frees its unique key, and reports ErrNotFound for an unknown job.
func TestFinishInEveryState(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		leased := f.publish(t, queue.PublishParams{Queue: "l", UniqueKey: "ul"})
		f.consumeOne(t, "l")
		ready := f.publish(t, queue.PublishParams{Queue: "r", UniqueKey: "ur"})
		delayed := f.publish(t, queue.PublishParams{Queue: "d", Delay: time.Hour})
		dead := f.killJobs(t, "x", 1)[0]
		ended := f.publish(t, queue.PublishParams{Queue: "e", TTR: 20 * time.Millisecond})
		f.consumeOne(t, "e")
		testwait.Until(t, time.Minute, "the lease to end", func() bool {
			j, err := f.client.Get(ctx, f.ns, "e", ended)
			return err == nil && time.Now().After(j.LeaseUntil)
		})
		for _, c := range []struct{ q, id, counter string }{
			{"l", leased, "acked"}, {"r", ready, "deleted"}, {"d", delayed, "deleted"}, {"x", dead, "deleted"}, {"e", ended, "deleted"},
		} {
			if err := f.client.Finish(ctx, f.ns, c.q, c.id); err != nil {
				t.Fatalf("Finish(%s in %s) = %v", c.id, c.q, err)
			}
			if _, err := f.client.Get(ctx, f.ns, c.q, c.id); !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("finished job %s of %s still there", c.id, c.q)
			}
			s := f.stats(t, c.q)
			if got := map[string]int64{"acked": s.Acked, "deleted": s.Deleted}[c.counter]; got != 1 {
				t.Fatalf("queue %s: %s = %d after Finish, want 1 (%+v)", c.q, c.counter, got, s)
			}
			if s.Ready+s.Delayed+s.Leased+s.Dead != 0 {
				t.Fatalf("queue %s still has jobs: %+v", c.q, s)
			}
			if err := f.client.Finish(ctx, f.ns, c.q, c.id); !errors.Is(err, queue.ErrNotFound) {
				t.Fatalf("second Finish = %v, want ErrNotFound", err)
			}
		}
		for q, u := range map[string]string{"l": "ul", "r": "ur"} {
			if r, err := f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: q, UniqueKey: u}); err != nil || r.Duplicate {
				t.Fatalf("publish of %s after Finish = %+v, %v", u, r, err)
			}
		}
		if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "l", ID: leased, Delivery: 0}); !errors.Is(err, sluice.ErrInvalid) {
			t.Fatalf("Ack with delivery 0 = %v, want ErrInvalid", err)
		}
	})
}

func TestLeaseCallsValidate(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	err := f.client.Ack(ctxT(t), queue.AckParams{Namespace: f.ns, Queue: "q", ID: "x", Delivery: 0})
	var v *sluice.FieldError
	if !errors.As(err, &v) || v.Field != "delivery" {
		t.Fatalf("Ack delivery 0 = %v", err)
	}
	neg := -time.Second
	_, err = f.client.Nack(ctxT(t), queue.NackParams{Namespace: f.ns, Queue: "q", ID: "x", Delivery: 1, RetryAfter: &neg})
	if !errors.As(err, &v) || v.Field != "retry_after" {
		t.Fatalf("Nack negative retry = %v", err)
	}
	_, err = f.client.Touch(ctxT(t), queue.TouchParams{Namespace: f.ns, Queue: "q", ID: "", Delivery: 1})
	if !errors.As(err, &v) || v.Field != "job_id" {
		t.Fatalf("Touch empty id = %v", err)
	}
}

// AckMany has no count limit, so a large batch of one queue must not fail inside the script.
func TestAckManyLargeBatchOfOneQueue(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		const n = 8500
		ps := make([]queue.PublishParams, n)
		for i := range ps {
			ps[i] = queue.PublishParams{Namespace: f.ns, Queue: "q"}
		}
		if _, err := f.client.PublishMany(ctx, ps); err != nil {
			t.Fatalf("PublishMany: %v", err)
		}
		var acks []queue.AckParams
		for len(acks) < n {
			ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: queue.MaxConsumeCount})
			if len(ds) == 0 {
				t.Fatalf("consumed %d of %d jobs", len(acks), n)
			}
			for _, d := range ds {
				acks = append(acks, queue.AckParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery})
			}
		}
		errs, err := f.client.AckMany(ctx, acks)
		if err != nil {
			t.Fatalf("AckMany of %d: %v", n, err)
		}
		for i, e := range errs {
			if e != nil {
				t.Fatalf("ack %d: %v", i, e)
			}
		}
		if s := f.stats(t, "q"); s.Leased != 0 || s.Acked != n {
			t.Fatalf("stats = %+v", s)
		}
	})
}

// A duration below the millisecond resolution of the engine is refused, as Consume and Publish
// refuse one, rather than read as 0 ("the job's own"): a 0.5ms lease asked for is not a 30s one.
func TestSubMillisecondDurationsAreRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	f.killJobs(t, "d", 1)
	f.publish(t, queue.PublishParams{Queue: "q"})
	d := f.consumeOne(t, "q")
	if until, err := f.client.Touch(ctx, queue.TouchParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery, TTR: 500 * time.Microsecond}); !errors.Is(err, sluice.ErrInvalid) {
		t.Fatalf("Touch with a 0.5ms ttr = %v, %v; want ErrInvalid", until, err)
	}
	if ids, err := f.client.DeadRespawn(ctx, queue.DeadRespawnParams{Namespace: f.ns, Queue: "d", Limit: 1, TTL: 500 * time.Microsecond}); !errors.Is(err, sluice.ErrInvalid) {
		t.Fatalf("DeadRespawn with a 0.5ms ttl = %v, %v; want ErrInvalid", ids, err)
	}
	f.ack(t, d)
}

func TestBackoffWithoutMaxStopsAtSevenDays(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	id := f.publish(t, queue.PublishParams{Queue: "q", Tries: 10, Backoff: queue.Backoff{Base: 24 * time.Hour}})
	var due time.Duration
	for range 5 { // delays 1, 2, 4, 8 (capped to 7), 16 (capped to 7) days
		d := f.consumeOne(t, "q")
		if _, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: d.Delivery}); err != nil {
			t.Fatal(err)
		}
		j, _ := f.client.Get(ctx, f.ns, "q", id)
		due = j.DueAt.Sub(d.LeaseUntil.Add(-30 * time.Second))
		f.env.Client.ZAdd(ctx, f.env.Prefix+":{ns:q}:delayed", redisZ(0, id))
	}
	if due < 7*24*time.Hour-time.Minute || due > 7*24*time.Hour+time.Minute {
		t.Fatalf("the fifth retry is due in %s, want the 7-day cap", due)
	}
}
