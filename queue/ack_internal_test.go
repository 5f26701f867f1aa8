package queue

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testwait"
)

// TestAckNoResultAnswersAsAckDoes sends one batch of result-less acks through each ack script, on
// two queues brought to the same state, and checks that both scripts answer each ack alike and
// leave the queue alike: the acked jobs gone with their leases and unique key, the refused ones
// untouched.
func TestAckNoResultAnswersAsAckDoes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, ctx := newInternalClient(t, env)
		scripts := map[string]func(queueKeys, []AckParams) ([]any, error){
			"ack": func(k queueKeys, ps []AckParams) ([]any, error) {
				return c.run(ctx, scriptAck, k, ackScriptArgs(ps)...).Slice()
			},
			"ack_noresult": func(k queueKeys, ps []AckParams) ([]any, error) { return c.ackNoResult(ctx, k, ps) },
		}
		// The jobs, in the order they are published and consumed.
		labels := []string{"acked", "other-delivery", "lease-ended", "unique", "twice"}
		// What each ack of the batch must get: acked; lease lost (another delivery, a lease that
		// ended); acked, freeing its unique key; acked, then not found as the same call acked it;
		// not found.
		want := []int64{1, -1, -1, 1, 1, 0, 0}
		left := map[string][]string{}
		for q, ack := range scripts {
			ids := map[string]string{}
			for _, label := range labels {
				p := PublishParams{Namespace: "ns", Queue: q, Payload: []byte(label)}
				switch label {
				case "lease-ended":
					p.TTR = 20 * time.Millisecond
				case "unique":
					p.UniqueKey = "u"
				}
				res, err := c.Publish(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				ids[label] = res.ID
			}
			ds, err := c.Consume(ctx, ConsumeParams{Namespace: "ns", Queues: []string{q}, Count: len(labels)})
			if err != nil || len(ds) != len(labels) {
				t.Fatalf("Consume: %d deliveries, %v", len(ds), err)
			}
			ended := ds[2].LeaseUntil.Add(10 * time.Millisecond)
			testwait.Until(t, 5*time.Second, "the short lease to end", func() bool { return time.Now().After(ended) })
			ps := []AckParams{
				{ID: ids["acked"], Delivery: 1},
				{ID: ids["other-delivery"], Delivery: 2},
				{ID: ids["lease-ended"], Delivery: 1},
				{ID: ids["unique"], Delivery: 1},
				{ID: ids["twice"], Delivery: 1},
				{ID: ids["twice"], Delivery: 1},
				{ID: "no-such-job", Delivery: 1},
			}
			for i := range ps {
				ps[i].Namespace, ps[i].Queue = "ns", q
			}
			if !acksWithoutResult(ps) {
				t.Fatal("the batch does not qualify for ack_noresult.lua")
			}
			reply, err := ack(c.keys.get("ns", q), ps)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for i, w := range want {
				if reply[i] != w {
					t.Errorf("%s.lua: ack %d (%s) = %v, want %d", q, i, ps[i].ID, reply[i], w)
				}
			}
			// What is left: each job still stored and whether it still holds a lease.
			k := c.keys.get("ns", q)
			for _, label := range labels {
				stored, _ := env.Client.HExists(ctx, k.jobs(), ids[label]).Result()
				leased, _ := env.Client.HExists(ctx, k.lease(), ids[label]).Result()
				inLeased, _ := env.Client.ZScore(ctx, k.leased(), ids[label]).Result()
				left[q] = append(left[q], label, bools(stored, leased, inLeased > 0))
			}
			st, err := c.Stats(ctx, "ns", q)
			if err != nil || st.Acked != 3 {
				t.Errorf("%s.lua: %d acked in stats, %v; want 3", q, st.Acked, err)
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
