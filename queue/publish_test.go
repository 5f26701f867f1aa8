package queue_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

func TestPublishConsumeAck(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		id := f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte("hello"), Attributes: map[string]string{"a": "b"}})
		d := f.consumeOne(t, "q")
		if d.ID != id || string(d.Payload) != "hello" || d.Delivery != 1 || d.RemainingTries != 2 || d.Attributes["a"] != "b" {
			t.Fatalf("delivery = %+v", d)
		}
		if d.Namespace != f.ns || d.Queue != "q" || d.PublishedAt.IsZero() || d.Elapsed < 0 {
			t.Fatalf("delivery metadata = %+v", d)
		}
		f.ack(t, d)
		s := f.stats(t, "q")
		if s.Ready != 0 || s.Leased != 0 || s.Published != 1 || s.Consumed != 1 || s.Acked != 1 {
			t.Fatalf("stats = %+v", s)
		}
		if _, err := f.client.Get(ctxT(t), f.ns, "q", id); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("Get after ack without result: %v, want ErrNotFound", err)
		}
	})
}

func TestPublishValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{MaxPayloadBytes: 10})
	ok := queue.PublishParams{Namespace: "ns", Queue: "q"}
	tests := []struct {
		name  string
		edit  func(p *queue.PublishParams)
		field string
	}{
		{"empty namespace", func(p *queue.PublishParams) { p.Namespace = "" }, "namespace"},
		{"bad namespace", func(p *queue.PublishParams) { p.Namespace = "a:b" }, "namespace"},
		{"bad queue", func(p *queue.PublishParams) { p.Queue = "a{b}" }, "queue"},
		{"long queue", func(p *queue.PublishParams) { p.Queue = strings.Repeat("a", 256) }, "queue"},
		{"payload too big", func(p *queue.PublishParams) { p.Payload = make([]byte, 11) }, "payload"},
		{"priority high", func(p *queue.PublishParams) { p.Priority = 256 }, "priority"},
		{"priority negative", func(p *queue.PublishParams) { p.Priority = -1 }, "priority"},
		{"negative delay", func(p *queue.PublishParams) { p.Delay = -time.Second }, "delay"},
		{"delay and run_at", func(p *queue.PublishParams) { p.Delay = time.Second; p.RunAt = time.Now() }, "run_at"},
		{"negative tries", func(p *queue.PublishParams) { p.Tries = -1 }, "tries"},
		{"negative ttl", func(p *queue.PublishParams) { p.TTL = -1 }, "ttl"},
		{"ttl before due", func(p *queue.PublishParams) { p.TTL = time.Second; p.Delay = 2 * time.Second }, "ttl"},
		{"negative ttr", func(p *queue.PublishParams) { p.TTR = -1 }, "ttr"},
		{"backoff max below base", func(p *queue.PublishParams) { p.Backoff = queue.Backoff{Base: time.Second, Max: time.Millisecond} }, "backoff"},
		{"long unique key", func(p *queue.PublishParams) { p.UniqueKey = strings.Repeat("k", 513) }, "unique_key"},
		{"too many attributes", func(p *queue.PublishParams) {
			p.Attributes = map[string]string{}
			for i := range 33 {
				p.Attributes[strings.Repeat("k", i+1)] = "v"
			}
		}, "attributes"},
		{"empty attribute key", func(p *queue.PublishParams) { p.Attributes = map[string]string{"": "v"} }, "attributes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := ok
			tt.edit(&p)
			_, err := f.client.Publish(ctxT(t), p)
			var v *sluice.FieldError
			if !errors.As(err, &v) || v.Field != tt.field || !errors.Is(err, sluice.ErrInvalid) {
				t.Fatalf("Publish error = %v, want a validation error on %q", err, tt.field)
			}
		})
	}
	t.Run("nothing written", func(t *testing.T) {
		t.Parallel()
		if s := f.stats(t, "q"); s.Published != 0 || s.Ready != 0 {
			t.Fatalf("a rejected publish changed the queue: %+v", s)
		}
	})
}

func TestPublishManyNamesTheBadJobAndPublishesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	_, err := f.client.PublishMany(ctxT(t), []queue.PublishParams{
		{Namespace: f.ns, Queue: "q"},
		{Namespace: f.ns, Queue: "q", Priority: 300},
	})
	var v *sluice.FieldError
	if !errors.As(err, &v) || v.Field != "jobs[1].priority" {
		t.Fatalf("PublishMany error = %v, want jobs[1].priority", err)
	}
	if s := f.stats(t, "q"); s.Published != 0 {
		t.Fatalf("published %d jobs of a rejected batch", s.Published)
	}
}

func TestPublishManyAcrossQueues(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		var ps []queue.PublishParams
		for i := range 30 {
			ps = append(ps, queue.PublishParams{Namespace: f.ns, Queue: []string{"a", "b", "c"}[i%3], Payload: []byte{byte(i)}})
		}
		res, err := f.client.PublishMany(ctxT(t), ps)
		if err != nil {
			t.Fatalf("PublishMany: %v", err)
		}
		seen := map[string]bool{}
		for i, r := range res {
			if r.ID == "" || r.Duplicate || seen[r.ID] {
				t.Fatalf("result %d = %+v", i, r)
			}
			seen[r.ID] = true
			j, err := f.client.Get(ctxT(t), f.ns, ps[i].Queue, r.ID)
			if err != nil || j.Payload[0] != byte(i) {
				t.Fatalf("job %d in %s: %+v, %v", i, ps[i].Queue, j, err)
			}
		}
		for _, q := range []string{"a", "b", "c"} {
			if s := f.stats(t, q); s.Ready != 10 {
				t.Fatalf("queue %s has %d ready, want 10", q, s.Ready)
			}
		}
		qs, err := f.client.Queues(ctxT(t), f.ns)
		if err != nil || strings.Join(qs, ",") != "a,b,c" {
			t.Fatalf("Queues = %v, %v", qs, err)
		}
	})
}

func TestJobIDsSortByPublishOrder(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ps := make([]queue.PublishParams, 200)
	for i := range ps {
		ps[i] = queue.PublishParams{Namespace: f.ns, Queue: "q"}
	}
	res, err := f.client.PublishMany(ctxT(t), ps)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.ID
		if len(r.ID) != 26 {
			t.Fatalf("id %q is not 26 characters", r.ID)
		}
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatalf("ids of one process are not increasing: %v", ids[:5])
	}
}

func TestUniqueKeyDeduplicates(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		p := queue.PublishParams{Namespace: f.ns, Queue: "q", UniqueKey: "order-42", Payload: []byte("first")}
		first, err := f.client.Publish(ctx, p)
		if err != nil || first.Duplicate {
			t.Fatalf("first publish = %+v, %v", first, err)
		}
		p.Payload = []byte("second")
		again, err := f.client.Publish(ctx, p)
		if err != nil || !again.Duplicate || again.ID != first.ID {
			t.Fatalf("second publish = %+v, %v; want duplicate of %s", again, err, first.ID)
		}
		// In one batch too.
		res, err := f.client.PublishMany(ctx, []queue.PublishParams{p, {Namespace: f.ns, Queue: "q", UniqueKey: "other"}, {Namespace: f.ns, Queue: "q", UniqueKey: "other"}})
		if err != nil || !res[0].Duplicate || res[1].Duplicate || !res[2].Duplicate || res[2].ID != res[1].ID {
			t.Fatalf("batch = %+v, %v", res, err)
		}
		if s := f.stats(t, "q"); s.Ready != 2 || s.Published != 2 {
			t.Fatalf("stats = %+v, want 2 jobs", s)
		}
		// Once the holder is done the key is free again.
		for range 2 {
			f.ack(t, f.consumeOne(t, "q"))
		}
		third, err := f.client.Publish(ctx, p)
		if err != nil || third.Duplicate || third.ID == first.ID {
			t.Fatalf("publish after the holder finished = %+v, %v", third, err)
		}
	})
}

// Concurrent publishes (merged into shared script calls) answer as lone ones do: of many calls
// with one unique key, exactly one publishes and every other names it as a duplicate, and a lone
// call afterwards names the same job.
func TestUniqueKeyConcurrentCallsAnswerAsLoneOnes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		const calls = 40
		results := make(chan queue.PublishResult, calls)
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				res, err := f.client.Publish(ctxT(t), queue.PublishParams{Namespace: f.ns, Queue: "q", UniqueKey: "k"})
				if err != nil {
					t.Error(err)
				}
				results <- res
			})
		}
		wg.Wait()
		close(results)
		holder, published := "", 0
		var dups []string
		for r := range results {
			if r.Duplicate {
				dups = append(dups, r.ID)
				continue
			}
			holder = r.ID
			published++
		}
		if published != 1 {
			t.Fatalf("%d of %d concurrent calls with one unique key published, want 1", published, calls)
		}
		for _, id := range dups {
			if id != holder {
				t.Fatalf("a duplicate named %s, want the holder %s", id, holder)
			}
		}
		lone, err := f.client.Publish(ctxT(t), queue.PublishParams{Namespace: f.ns, Queue: "q", UniqueKey: "k"})
		if err != nil || !lone.Duplicate || lone.ID != holder {
			t.Fatalf("lone publish = %+v, %v; want a duplicate of %s", lone, err, holder)
		}
		if s := f.stats(t, "q"); s.Ready != 1 || s.Published != 1 {
			t.Fatalf("stats = %+v, want 1 job", s)
		}
	})
}

func TestUniqueKeyWindowEnds(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	p := queue.PublishParams{Namespace: f.ns, Queue: "q", UniqueKey: "k", UniqueFor: 30 * time.Millisecond}
	first := f.publish(t, p)
	testwait.Until(t, time.Minute, "the unique window to end", func() bool {
		r, err := f.client.Publish(ctxT(t), p)
		return err == nil && !r.Duplicate && r.ID != first
	})
}

// A job whose ttl passed is gone (docs/job-states.md) even before housekeeping removes it, so its
// unique key no longer makes a publish a duplicate: the new job must be published, not lost.
func TestPublishUniqueKeyOfExpiredJobIsFree(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		old := f.publish(t, queue.PublishParams{Queue: "q", UniqueKey: "u", TTL: 50 * time.Millisecond})
		// Get answers not found once the ttl has passed by Redis's clock; it removes nothing.
		testwait.Until(t, time.Minute, "the ttl to pass by Redis's clock", func() bool {
			_, err := f.client.Get(ctx, f.ns, "q", old)
			return errors.Is(err, queue.ErrNotFound)
		})
		res, err := f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: "q", UniqueKey: "u", Payload: []byte("new")})
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if res.Duplicate || res.ID == old {
			t.Fatalf("Publish = %+v: the expired job %s still held the unique key", res, old)
		}
		d := f.consumeOne(t, "q")
		if d.ID != res.ID || string(d.Payload) != "new" {
			t.Fatalf("consumed %s %q, want the new job %s", d.ID, d.Payload, res.ID)
		}
		if s := f.stats(t, "q"); s.Expired != 1 || s.Ready != 0 {
			t.Fatalf("stats = %+v", s)
		}

		// A leased job is not taken from its consumer when its ttl passes: it keeps the key.
		leased := f.publish(t, queue.PublishParams{Queue: "l", UniqueKey: "u", TTL: 50 * time.Millisecond})
		ld := f.consumeOne(t, "l")
		testwait.Until(t, time.Minute, "the ttl to pass by Redis's clock", func() bool {
			now, err := env.Client.Time(ctx).Result()
			return err == nil && now.After(ld.ExpiresAt)
		})
		res, err = f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: "l", UniqueKey: "u"})
		if err != nil || !res.Duplicate || res.ID != leased {
			t.Fatalf("Publish while the holder is leased = %+v, %v; want a duplicate of %s", res, err, leased)
		}
		f.ack(t, ld)
	})
}

// A leased job whose lease ended with no tries left is dead by the contract even before
// housekeeping moves it, so its unique key no longer makes a publish a duplicate.
func TestPublishUniqueKeyOfJobWhoseLastLeaseEndedIsFree(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		old := f.publish(t, queue.PublishParams{Queue: "q", UniqueKey: "u", Tries: 1})
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, TTR: 50 * time.Millisecond})
		if len(ds) != 1 {
			t.Fatalf("consumed %d jobs", len(ds))
		}
		testwait.Until(t, time.Minute, "the lease to end by Redis's clock", func() bool {
			now, err := env.Client.Time(ctx).Result()
			return err == nil && now.After(ds[0].LeaseUntil)
		})
		res, err := f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: "q", UniqueKey: "u", Payload: []byte("new")})
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if res.Duplicate || res.ID == old {
			t.Fatalf("Publish = %+v: the job %s out of tries still held the unique key", res, old)
		}
		d := f.consumeOne(t, "q")
		if d.ID != res.ID {
			t.Fatalf("consumed %s, want the new job %s", d.ID, res.ID)
		}
		j, err := f.client.Get(ctx, f.ns, "q", old)
		if err != nil || j.State != queue.StateDead || j.LastError != "lease expired" {
			t.Fatalf("old job = %+v, %v; want it dead", j, err)
		}

		// With tries left the job is retried: still pending, it keeps its key.
		kept := f.publish(t, queue.PublishParams{Queue: "r", UniqueKey: "u", Tries: 2})
		ds = f.consume(t, queue.ConsumeParams{Queues: []string{"r"}, TTR: 50 * time.Millisecond})
		if len(ds) != 1 {
			t.Fatalf("consumed %d jobs", len(ds))
		}
		testwait.Until(t, time.Minute, "the lease to end by Redis's clock", func() bool {
			now, err := env.Client.Time(ctx).Result()
			return err == nil && now.After(ds[0].LeaseUntil)
		})
		res, err = f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: "r", UniqueKey: "u"})
		if err != nil || !res.Duplicate || res.ID != kept {
			t.Fatalf("Publish = %+v, %v; want a duplicate of %s", res, err, kept)
		}
		if d := f.consumeOne(t, "r"); d.ID != kept || d.Delivery != 2 {
			t.Fatalf("redelivery = %+v", d)
		}
	})
}

// A lone Publish (one job per script call) and PublishMany (a batch) store the same job.
func TestPublishOneAndManyStoreTheSameJob(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		kinds := []queue.PublishParams{
			{Payload: []byte("plain")},
			{Payload: []byte("full"), Priority: 9, Tries: 5, TTL: time.Hour, TTR: 7 * time.Second,
				Backoff: queue.Backoff{Base: time.Second, Max: time.Minute}, Attributes: map[string]string{"a": "b"}},
			{Payload: []byte("delayed"), Delay: time.Hour, TTL: 2 * time.Hour},
			{Payload: []byte("run-at"), RunAt: time.Now().Add(time.Hour)},
			{Payload: []byte("run-at-past"), RunAt: time.Now().Add(-time.Hour)},
			{Payload: []byte("unique"), UniqueKey: "u"},
			{Payload: []byte("callback"), Callback: &queue.Callback{URL: "http://example.com/x"}},
		}
		for i, p := range kinds {
			p.Namespace = f.ns
			one, many := p, p
			one.Queue, many.Queue = fmt.Sprintf("one%d", i), fmt.Sprintf("many%d", i)
			res, err := f.client.Publish(ctx, one)
			if err != nil {
				t.Fatalf("%s: Publish: %v", p.Payload, err)
			}
			batch, err := f.client.PublishMany(ctx, []queue.PublishParams{many, {Namespace: f.ns, Queue: many.Queue}})
			if err != nil {
				t.Fatalf("%s: PublishMany: %v", p.Payload, err)
			}
			a, err := f.client.Get(ctx, f.ns, one.Queue, res.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, err := f.client.Get(ctx, f.ns, many.Queue, batch[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if a.State != b.State || !bytes.Equal(a.Payload, b.Payload) || a.Priority != b.Priority ||
				a.Tries != b.Tries || a.RemainingTries != b.RemainingTries || a.TTL != b.TTL || a.TTR != b.TTR ||
				a.Backoff != b.Backoff || a.UniqueKey != b.UniqueKey || !maps.Equal(a.Attributes, b.Attributes) ||
				(a.Callback == nil) != (b.Callback == nil) || a.Position != b.Position ||
				a.DueAt.Sub(a.PublishedAt).Round(time.Minute) != b.DueAt.Sub(b.PublishedAt).Round(time.Minute) ||
				a.ExpiresAt.IsZero() != b.ExpiresAt.IsZero() {
				t.Fatalf("%s: lone publish stored\n%+v\nbatch stored\n%+v", p.Payload, a, b)
			}
		}
	})
}

// Delays and run-at times that are not whole milliseconds round up, never down: Redis counts in
// ms, and a job due a fraction of a ms before its delay ends would start early.
func TestPublishRoundsSubMillisecondTimesUp(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	for i := range 20 { // some calls land mid-millisecond on Redis's clock, some may not
		id := f.publish(t, queue.PublishParams{Queue: "delay", Payload: []byte("x"), Delay: time.Millisecond + time.Nanosecond})
		j, err := f.client.Get(ctxT(t), f.ns, "delay", id)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if gap := j.DueAt.Sub(j.PublishedAt); gap < 2*time.Millisecond {
			t.Fatalf("publish %d: a 1.000001ms delay is due %s after the publish, want at least 2ms", i, gap)
		}
	}
	runAt := time.Now().Add(time.Hour).Truncate(time.Millisecond).Add(300 * time.Microsecond)
	id := f.publish(t, queue.PublishParams{Queue: "at", Payload: []byte("x"), RunAt: runAt})
	j, err := f.client.Get(ctxT(t), f.ns, "at", id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if j.DueAt.Before(runAt) {
		t.Fatalf("run at %s is due at %s, before it", runAt.Format(time.RFC3339Nano), j.DueAt.Format(time.RFC3339Nano))
	}
}
