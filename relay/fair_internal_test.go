package relay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// fairEndpoint stores a FairShare endpoint that no dispatcher serves: the tests start its tasks
// with takeFair, one script call at a time.
func fairEndpoint(t *testing.T, c *Client, name string) Endpoint {
	t.Helper()
	e, err := c.SetEndpoint(t.Context(), Endpoint{Name: name, TargetURL: "http://127.0.0.1:9/", Concurrency: 1_000, FairShare: true})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// submitAs queues one task of subject at priority pri and returns its id.
func submitAs(t *testing.T, c *Client, endpoint, subject string, pri int) string {
	t.Helper()
	r, err := c.Submit(t.Context(), SubmitParams{Endpoint: endpoint, Subject: subject, Priority: pri, PriorityCap: MaxPriority})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// takeFair starts up to n tasks of endpoint in one take.lua call (no call is made: no dispatcher
// serves the endpoint) and returns the subjects of the tasks started, in the order they were
// taken.
func takeFair(t *testing.T, c *Client, endpoint string, n int) []string {
	t.Helper()
	ctx := t.Context()
	out, err := c.run(ctx, scriptTake, endpoint, n, 1_000, 0, 1, 60_000, 60_000, 0, n).Slice()
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for i := 3; i+7 < len(out); i += 8 {
		id, _ := out[i].(string)
		subj, err := c.rdb.HGet(ctx, c.keys.get(endpoint).task(id), "subj").Result()
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, subj)
	}
	return subjects
}

// Subjects take turns within a priority, one task each per round, in the order their tasks came
// within a round; a higher priority still goes first; a subject that queues more goes to the
// round after its last; one that comes back after its only task started joins the current round.
func TestFairShareTakesTurnsBetweenSubjects(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		fairEndpoint(t, c, "turns")
		for range 5 {
			submitAs(t, c, "turns", "A", 0) // rounds 1 to 5
		}
		submitAs(t, c, "turns", "B", 0) // rounds 1 and 2
		submitAs(t, c, "turns", "B", 0)
		submitAs(t, c, "turns", "C", 0) // round 1
		submitAs(t, c, "turns", "D", 7)
		steps := []struct {
			then    func()
			n       int
			want    string
			because string
		}{
			{nil, 3, "D A B", "priority 7 first, then round 1 by submit order"},
			{func() { submitAs(t, c, "turns", "B", 0) }, 4, "C A B A", "the rest of round 1, round 2, A's round 3 (B's third task is in round 3 too, after A's)"},
			{func() { submitAs(t, c, "turns", "C", 0) }, 10, "B C A A", "C came back in the current round 3"},
		}
		for _, st := range steps {
			if st.then != nil {
				st.then()
			}
			if got := strings.Join(takeFair(t, c, "turns", st.n), " "); got != st.want {
				t.Fatalf("took %s, want %s: %s", got, st.want, st.because)
			}
		}
	})
}

// A subject whose waiting tasks were all cancelled is not held back by their rounds: its next
// task joins the current round, or, when its rounds were in another priority than its last
// cancelled task's, the next one.
func TestFairShareCancelledRoundsAreNotKept(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		for _, other := range []bool{false, true} {
			name := fmt.Sprintf("cancelled-%v", other)
			fairEndpoint(t, c, name)
			var gone []string
			for range 50 {
				gone = append(gone, submitAs(t, c, name, "A", 0)) // rounds 1 to 50
			}
			if other {
				gone = append(gone, submitAs(t, c, name, "A", 5)) // cancelled last
			}
			for range 5 {
				submitAs(t, c, name, "B", 0) // rounds 1 to 5
			}
			for _, id := range gone {
				if _, err := c.Cancel(t.Context(), id); err != nil {
					t.Fatal(err)
				}
			}
			submitAs(t, c, name, "A", 0)
			want := "B A B B B B" // round 1, after B's
			if other {
				want = "B B A B B B" // round 2
			}
			if got := strings.Join(takeFair(t, c, name, 10), " "); got != want {
				t.Fatalf("rounds in another priority %v: order %s, want %s", other, got, want)
			}
		}
	})
}

// The per-round state stays small: rounds of subjects the current round passed are forgotten as
// tasks start, a subject whose tasks were all cancelled leaves nothing, and the key expires with
// the queue timeout.
func TestFairShareStateIsBounded(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx := t.Context()
		e := fairEndpoint(t, c, "bounded")
		fair := c.keys.get("bounded").all[13]
		members := func() []string { return c.rdb.ZRange(ctx, fair, 0, -1).Val() }
		for i := range 300 {
			submitAs(t, c, "bounded", fmt.Sprintf("u%d", i), 0)
			submitAs(t, c, "bounded", "flood", 0)
			submitAs(t, c, "bounded", "flood", 0)
		}
		if n := len(members()); n != 302 {
			t.Fatalf("fair key holds %d members after 301 subjects, want 302 (with the band's round)", n)
		}
		for len(takeFair(t, c, "bounded", 200)) > 0 {
		}
		if got := members(); !slices.Equal(got, []string{"255", "255:flood"}) {
			t.Fatalf("once every task started the fair key holds %v; want the band's round and the subject of that round", got)
		}
		for i := range 300 {
			id := submitAs(t, c, "bounded", fmt.Sprintf("gone%d", i), 0)
			if _, err := c.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if got := members(); len(got) != 2 {
			t.Fatalf("subjects whose tasks were cancelled left %d members: %v", len(got)-2, got)
		}
		ttl := c.rdb.PTTL(ctx, fair).Val()
		if ttl <= 0 || ttl > e.QueueTimeout {
			t.Fatalf("fair key lives %s, want a lifetime up to the queue timeout %s", ttl, e.QueueTimeout)
		}
	})
}

// A submit sent twice to a FairShare endpoint records each subject's round once: the resend
// changes no round, so the subject keeps its turn.
func TestFairShareSubmitSentAgainKeepsRounds(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := internalClient(t, env)
		ctx := t.Context()
		e := fairEndpoint(t, c, "again")
		submitAs(t, c, "again", "A", 0)
		var reqs []submitReq
		for _, subj := range []string{"A", "B", "A"} {
			p := &SubmitParams{Endpoint: "again", Subject: subj}
			req, err := c.checkSubmit(p, e.TargetURL)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, submitReq{e: e, id: c.ids.next(e.Name), p: p, req: req})
		}
		if _, err := c.runSubmits(ctx, e.Name, reqs); err != nil {
			t.Fatal(err)
		}
		k := c.keys.get("again")
		before := snapshotKeys(ctx, t, c.rdb, k.all[0], k.all[13])
		again, err := c.runSubmits(ctx, e.Name, reqs)
		if err != nil {
			t.Fatal(err)
		}
		if after := snapshotKeys(ctx, t, c.rdb, k.all[0], k.all[13]); after != before {
			t.Fatalf("the resend changed the queue or the rounds:\nbefore %s\nafter  %s", before, after)
		}
		for i, r := range again {
			if r.code != 0 {
				t.Fatalf("task %d sent again answered %+v", i, r)
			}
		}
		if got := strings.Join(takeFair(t, c, "again", 10), " "); got != "A B A A" {
			t.Fatalf("order %s, want A B A A", got)
		}
	})
}

// snapshotKeys renders sorted sets with their scores, for comparing states.
func snapshotKeys(ctx context.Context, t *testing.T, rdb redis.UniversalClient, keys ...string) string {
	t.Helper()
	var b strings.Builder
	for _, key := range keys {
		zs, err := rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %v; ", key[strings.LastIndexByte(key, ':')+1:], zs)
	}
	return b.String()
}
