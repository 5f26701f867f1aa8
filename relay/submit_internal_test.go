package relay

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// A submit sent again (go-redis resends a script call whose reply was lost, after the script may
// have run) queues nothing twice: the same answer, one queue entry per task, one count per subject,
// and a task taken in between stays taken.
func TestSubmitSentAgainQueuesNothingTwice(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx := t.Context()
		e, err := c.SetEndpoint(ctx, Endpoint{Name: "again", TargetURL: "http://127.0.0.1:9/", Concurrency: 1, MaxQueuedPerSubject: 2})
		if err != nil {
			t.Fatal(err)
		}
		var reqs []submitReq
		for range 2 {
			p := &SubmitParams{Endpoint: "again", Subject: "alice"}
			req, err := c.checkSubmit(p, e.TargetURL)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, submitReq{e: e, id: c.ids.next(e.Name), p: p, req: req})
		}
		first, err := c.runSubmits(ctx, e.Name, reqs)
		if err != nil {
			t.Fatal(err)
		}
		// The first task starts before the call is sent again.
		if _, err := c.run(ctx, scriptTake, e.Name, 1, 1, 0, 1, 60_000, 60_000, 0, 1).Slice(); err != nil {
			t.Fatal(err)
		}
		again, err := c.runSubmits(ctx, e.Name, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range reqs {
			if again[i].code != 0 || again[i].createdAt != first[i].createdAt {
				t.Fatalf("task %d sent again answered %v, first %v", i, again[i], first[i])
			}
		}
		if started, err := c.Get(ctx, reqs[0].id); err != nil || started.Status != StatusProcessing || started.Tries != 1 {
			t.Fatalf("the started task after the resend: %s, %d tries, %v; want processing, 1", started.Status, started.Tries, err)
		}
		st, err := c.Stats(ctx, e.Name)
		if err != nil || st.Queued != 1 || st.Running != 1 {
			t.Fatalf("stats %+v, %v; want 1 queued and 1 running", st, err)
		}
		if n, err := env.Client.HGet(ctx, c.keys.get(e.Name).all[4], "alice").Int(); err != nil || n != 1 {
			t.Fatalf("alice counts %d tasks (%v), want 1: the waiting one", n, err)
		}
	})
}

// A keyed submit sent again answers as it first did (created, not a duplicate of itself), and
// keeps one record naming its task.
func TestKeyedSubmitSentAgainIsNotItsOwnDuplicate(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx := t.Context()
		e, err := c.SetEndpoint(ctx, Endpoint{Name: "again", TargetURL: "http://127.0.0.1:9/"})
		if err != nil {
			t.Fatal(err)
		}
		p := &SubmitParams{Endpoint: "again", Namespace: "shop", Submitter: "tok", IdempotencyKey: "k"}
		req, err := c.checkSubmit(p, e.TargetURL)
		if err != nil {
			t.Fatal(err)
		}
		record := c.keys.get(e.Name).idempotency(idempotencyScope("shop", "tok", "k"))
		reqs := []submitReq{{e: e, id: c.ids.next(e.Name), p: p, req: req, idem: record, hash: requestHash(e.Name, p, req)}}
		for range 2 {
			got, err := c.runSubmits(ctx, e.Name, reqs)
			if err != nil || got[0].code != 0 {
				t.Fatalf("keyed submit answered %+v, %v; want created (0)", got, err)
			}
		}
		if id, err := env.Client.HGet(ctx, record, "id").Result(); err != nil || id != reqs[0].id {
			t.Fatalf("record names %q (%v), want %s", id, err, reqs[0].id)
		}
		if ttl, err := env.Client.PTTL(ctx, record).Result(); err != nil || ttl <= 23*time.Hour || ttl > 24*time.Hour {
			t.Fatalf("record lives %s (%v), want the default retention of 24h", ttl, err)
		}
	})
}
