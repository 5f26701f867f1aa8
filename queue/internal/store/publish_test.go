package store

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// A publish call sent twice (a client retry after a lost reply) stores and queues each job once:
// a batch of jobs due now (publish_batch.lua) and a batch with a delayed job (publish.lua).
func TestPublishSentAgainQueuesNothingTwice(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s, ctx := newTestStore(t, env)
		for _, q := range []string{"due-now", "with-delayed"} {
			var jobs []*NewJob
			for i := range 3 {
				j := newJob("p")
				j.TTLMs = time.Hour.Milliseconds()
				if q == "with-delayed" && i == 2 {
					j.DelayMs = time.Minute.Milliseconds()
				}
				jobs = append(jobs, j)
			}
			first, err := s.Publish(ctx, "ns", q, jobs)
			if err != nil {
				t.Fatal(err)
			}
			again, err := s.Publish(ctx, "ns", q, jobs)
			if err != nil {
				t.Fatal(err)
			}
			for i := range jobs {
				if again[i] != first[i] || again[i].Duplicate || first[i].ID != jobs[i].ID {
					t.Fatalf("%s: resent publish %d answered %+v, want %+v", q, i, again[i], first[i])
				}
			}
			st, err := s.Stats(ctx, "ns", q)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ready+st.Delayed != 3 || st.Published != 3 {
				t.Fatalf("%s after a resent publish: %d ready, %d delayed, %d published; want 3 in all and 3", q, st.Ready, st.Delayed, st.Published)
			}
			if n, err := env.Client.ZCard(ctx, s.keys.get("ns", q).all[5]).Result(); err != nil || n != 3 {
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
		s, ctx := newTestStore(t, env)
		ready, delayed, unique, callback := newJob("ready"), newJob("delayed"), newJob("unique"), newJob("callback")
		delayed.DelayMs = time.Hour.Milliseconds()
		unique.UniqueKey = "k"
		// A callback as the queue stores one (JSON; the scripts only look whether there is one).
		callback.Callback = `{"url":"http://example.com/x","method":"POST","timeout_ms":30000}`
		callback.TTRMs = 35_000
		for _, j := range []*NewJob{ready, delayed, unique, callback} {
			first, err := s.Publish(ctx, "ns", "q", []*NewJob{j})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				again, err := s.Publish(ctx, "ns", "q", []*NewJob{j})
				if err != nil {
					t.Fatal(err)
				}
				if again[0] != first[0] || again[0].Duplicate {
					t.Fatalf("%s sent again answered %+v, want %+v", j.Payload, again[0], first[0])
				}
			}
		}
		st, err := s.Stats(ctx, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != 3 || st.Delayed != 1 || st.Published != 4 {
			t.Fatalf("after resent publishes: %d ready (callback lane included), %d delayed, %d published; want 3, 1 and 4", st.Ready, st.Delayed, st.Published)
		}
		n, err := env.Client.LLen(ctx, s.keys.get("ns", "q").all[1]+"callbacks").Result()
		if err != nil || n != 1 {
			t.Fatalf("callback lane holds %d jobs (%v), want 1", n, err)
		}
	})
}
