package store

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// TestAckNoResultAnswersAsAckDoes sends one batch of result-less acks through ack.lua and through
// the route that takes ack_noresult.lua (Ack, which leaves some finishes to ack.lua), on
// two queues brought to the same state, and checks that both answer each ack alike and leave the
// queue alike: the acked and finished jobs gone with their leases and unique key, the refused ones
// untouched.
func TestAckNoResultAnswersAsAckDoes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s, ctx := newTestStore(t, env)
		scripts := map[string]func(queueKeys, []Ack) ([]AckOutcome, error){
			"ack": func(k queueKeys, acks []Ack) ([]AckOutcome, error) { return s.ackWithScript(ctx, k, acks) },
			"ack_noresult": func(_ queueKeys, acks []Ack) ([]AckOutcome, error) {
				if !s.scripts.UsesFunctions(ctx) {
					t.Fatal("the store does not run ack_noresult.lua")
				}
				return s.Ack(ctx, acks)
			},
		}
		// The jobs, in the order they are published and consumed.
		labels := []string{"acked", "other-delivery", "lease-ended", "unique", "twice", "finish-leased", "finish-waiting"}
		// What each ack of the batch must get: acked; lease lost (another delivery, a lease that
		// ended); acked, freeing its unique key; acked, then not found as the same call acked it;
		// not found; a finish (lmstfy's ack) of a leased job acked; one of a job waiting in its
		// ready list deleted (left to ack.lua), then an ack of it not found; a finish of no job not
		// found.
		want := []AckOutcome{1, -1, -1, 1, 1, 0, 0, 1, 1, 0, 0}
		left := map[string][]string{}
		for q, ack := range scripts {
			ids := map[string]string{}
			for _, label := range labels[:len(labels)-1] {
				j := newJob(label)
				switch label {
				case "lease-ended":
					j.TTRMs = 20
				case "unique":
					j.UniqueKey = "u"
				}
				publish(t, ctx, s, "ns", q, j)
				ids[label] = j.ID
			}
			leased, err := s.Consume(ctx, "ns", q, len(labels), 0)
			if err != nil || len(leased.Jobs) != len(labels)-1 {
				t.Fatalf("Consume: %d deliveries, %v", len(leased.Jobs), err)
			}
			waiting := newJob("finish-waiting")
			publish(t, ctx, s, "ns", q, waiting)
			ids["finish-waiting"] = waiting.ID
			ended := time.UnixMilli(leased.Jobs[2].Num(RLease)).Add(10 * time.Millisecond)
			testwait.Until(t, time.Minute, "the short lease to end", func() bool { return time.Now().After(ended) })
			acks := []Ack{
				{ID: ids["acked"], Delivery: 1},
				{ID: ids["other-delivery"], Delivery: 2},
				{ID: ids["lease-ended"], Delivery: 1},
				{ID: ids["unique"], Delivery: 1},
				{ID: ids["twice"], Delivery: 1},
				{ID: ids["twice"], Delivery: 1},
				{ID: "no-such-job", Delivery: 1},
				{ID: ids["finish-leased"], Delivery: FinishAny},
				{ID: ids["finish-waiting"], Delivery: FinishAny},
				{ID: ids["finish-waiting"], Delivery: 1},
				{ID: "no-such-job", Delivery: FinishAny},
			}
			for i := range acks {
				acks[i].Namespace, acks[i].Queue = "ns", q
			}
			if !acksWithoutResult(acks) {
				t.Fatal("the batch does not qualify for ack_noresult.lua")
			}
			k := s.keys.get("ns", q)
			outcomes, err := ack(k, acks)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for i, w := range want {
				if outcomes[i] != w {
					t.Errorf("%s.lua: ack %d (%s) = %v, want %d", q, i, acks[i].ID, outcomes[i], w)
				}
			}
			// What is left: each job still stored and whether it still holds a lease.
			for _, label := range labels {
				stored, _ := env.Client.HExists(ctx, k.jobs(), ids[label]).Result()
				leased, _ := env.Client.HExists(ctx, k.lease(), ids[label]).Result()
				inLeased, _ := env.Client.ZScore(ctx, k.leased(), ids[label]).Result()
				left[q] = append(left[q], label, bools(stored, leased, inLeased > 0))
			}
			st, err := s.Stats(ctx, "ns", q)
			if err != nil || st.Acked != 4 || st.Deleted != 1 || st.Ready != 0 {
				t.Errorf("%s.lua: stats %d acked, %d deleted, %d ready, %v; want 4, 1, 0", q, st.Acked, st.Deleted, st.Ready, err)
			}
			if n, err := env.Client.Exists(ctx, k.unique()+"u").Result(); err != nil || n != 0 {
				t.Errorf("%s.lua: the acked job's unique key is still held (%d, %v)", q, n, err)
			}
		}
		wantLeft := []string{
			"acked", "stored no, lease no, leased no",
			"other-delivery", "stored yes, lease yes, leased yes",
			"lease-ended", "stored yes, lease yes, leased yes",
			"unique", "stored no, lease no, leased no",
			"twice", "stored no, lease no, leased no",
			"finish-leased", "stored no, lease no, leased no",
			"finish-waiting", "stored no, lease no, leased no",
		}
		for q, got := range left {
			if !slices.Equal(got, wantLeft) {
				t.Errorf("%s.lua left %q\nwant %q", q, got, wantLeft)
			}
		}
	})
}

func bools(stored, lease, leased bool) string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	return "stored " + yes(stored) + ", lease " + yes(lease) + ", leased " + yes(leased)
}

// TestFinishOfALeasedJobTakesOneCall checks that ack_noresult.lua finishes (lmstfy's ack, which
// names no delivery) a job under a running lease itself, and leaves a finish of a waiting job to
// ack.lua without touching it: lmstfy's clients ack leased jobs, and each of those finishes would
// otherwise cost a second script call.
func TestFinishOfALeasedJobTakesOneCall(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s, ctx := newTestStore(t, env)
		leased := newJob("leased")
		leased.UniqueKey = "u"
		publish(t, ctx, s, "ns", "q", leased)
		if got, err := s.Consume(ctx, "ns", "q", 1, 0); err != nil || len(got.Jobs) != 1 {
			t.Fatalf("Consume: %d deliveries, %v", len(got.Jobs), err)
		}
		waiting := newJob("waiting")
		publish(t, ctx, s, "ns", "q", waiting)
		k := s.keys.get("ns", "q")
		reply, err := s.ackNoResult(ctx, k, []Ack{
			{ID: leased.ID, Delivery: FinishAny},
			{ID: waiting.ID, Delivery: FinishAny},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(reply, []any{int64(Acked), int64(leftToAck)}) {
			t.Fatalf("ack_noresult.lua answered %v, want [1 %d]", reply, leftToAck)
		}
		if stored, _ := env.Client.HExists(ctx, k.jobs(), leased.ID).Result(); stored {
			t.Error("the finished leased job is still stored")
		}
		if n, err := env.Client.Exists(ctx, k.unique()+"u").Result(); err != nil || n != 0 {
			t.Errorf("the finished job's unique key is still held (%d, %v)", n, err)
		}
		if st, err := s.Stats(ctx, "ns", "q"); err != nil || st.Acked != 1 || st.Ready != 1 {
			t.Errorf("stats: %d acked, %d ready, %v; want 1 acked and the waiting job still ready", st.Acked, st.Ready, err)
		}
	})
}
