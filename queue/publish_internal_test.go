package queue

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// A publish call sent twice (a client retry after a lost reply) stores and queues each job once:
// a batch of jobs due now (publish_batch.lua) and a batch with a delayed job (publish.lua).
func TestPublishSentAgainQueuesNothingTwice(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, ctx := newInternalClient(t, env)
		for _, q := range []string{"due-now", "with-delayed"} {
			var reqs []publishReq
			for i := range 3 {
				p := PublishParams{Namespace: "ns", Queue: q, Payload: []byte("p"), TTL: time.Hour}
				if q == "with-delayed" && i == 2 {
					p.Delay = time.Minute
				}
				job, err := c.validateJob(p)
				if err != nil {
					t.Fatal(err)
				}
				reqs = append(reqs, publishReq{ns: "ns", q: q, job: job})
			}
			first, err := c.runPublish(ctx, "", reqs)
			if err != nil {
				t.Fatal(err)
			}
			again, err := c.runPublish(ctx, "", reqs)
			if err != nil {
				t.Fatal(err)
			}
			for i := range reqs {
				if again[i] != first[i] || again[i].Duplicate || first[i].ID != reqs[i].job.id {
					t.Fatalf("%s: resent publish %d answered %+v, want %+v", q, i, again[i], first[i])
				}
			}
			st, err := c.Stats(ctx, "ns", q)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ready+st.Delayed != 3 || st.Published != 3 {
				t.Fatalf("%s after a resent publish: %d ready, %d delayed, %d published; want 3 in all and 3", q, st.Ready, st.Delayed, st.Published)
			}
			if n, err := env.Client.ZCard(ctx, c.keys.get("ns", q).all[5]).Result(); err != nil || n != 3 {
				t.Fatalf("%s: %d jobs in the expiry index (%v), want 3", q, n, err)
			}
		}
	})
}

// A lone job's publish (one job per script call: HSETNX, no batching tables) sent again is
// answered as published and queued once, whatever the job: ready, delayed, holding a unique key,
// carrying a callback.
func TestPublishOneJobSentAgainQueuesItOnce(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, ctx := newInternalClient(t, env)
		jobs := []PublishParams{
			{Namespace: "ns", Queue: "q", Payload: []byte("ready")},
			{Namespace: "ns", Queue: "q", Payload: []byte("delayed"), Delay: time.Hour},
			{Namespace: "ns", Queue: "q", Payload: []byte("unique"), UniqueKey: "k"},
			{Namespace: "ns", Queue: "q", Payload: []byte("callback"), Callback: &Callback{URL: "http://example.com/x"}},
		}
		for _, p := range jobs {
			job, err := c.validateJob(p)
			if err != nil {
				t.Fatal(err)
			}
			req := []publishReq{{ns: "ns", q: "q", job: job}}
			first, err := c.runPublish(ctx, "", req)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				again, err := c.runPublish(ctx, "", req)
				if err != nil {
					t.Fatal(err)
				}
				if again[0] != first[0] || again[0].Duplicate {
					t.Fatalf("%s sent again answered %+v, want %+v", p.Payload, again[0], first[0])
				}
			}
		}
		st, err := c.Stats(ctx, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != 3 || st.Delayed != 1 || st.Published != 4 {
			t.Fatalf("after resent publishes: %d ready (callback lane included), %d delayed, %d published; want 3, 1 and 4", st.Ready, st.Delayed, st.Published)
		}
		n, err := env.Client.LLen(ctx, c.keys.get("ns", "q").all[1]+"callbacks").Result()
		if err != nil || n != 1 {
			t.Fatalf("callback lane holds %d jobs (%v), want 1", n, err)
		}
	})
}

// newInternalClient is a Client on env for the package's own tests, closed when the test ends,
// and a context that ends with the test or after 30 s.
func newInternalClient(t *testing.T, env *redistest.Env) (*Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := NewClient(env.Client, Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, ctx
}
