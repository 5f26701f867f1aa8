package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue/internal/store"
)

// TestAcksRideAlongAConsume: one batch of acks and consumes of a queue, as concurrent callers
// make it, gives every caller what its own call would have: acks done (the acked jobs gone, never
// leased again), a wrong delivery refused, a finish of a waiting job deleting it, an ack that keeps
// a result keeping it, and the consumes leasing the ready jobs, each one to one caller. It runs on
// Redis functions (standalone, cluster) and on EVAL scripts (a store without FUNCTION).
func TestAcksRideAlongAConsume(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c, ctx := newInternalClient(t, env)
		checkAcksRideAlongAConsume(ctx, t, c)
	})
	t.Run("without functions", func(t *testing.T) {
		t.Parallel()
		env := redistest.New(t)
		rdb, cmds := redistest.WithoutFunctions(t, env)
		c, err := NewClient(rdb, Config{Prefix: env.Prefix})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		checkAcksRideAlongAConsume(ctx, t, c)
		if functions, evals := cmds.Counts(); evals == 0 {
			t.Errorf("no EVAL sent (%d function commands refused)", functions)
		}
	})
}

func checkAcksRideAlongAConsume(ctx context.Context, t *testing.T, c *Client) {
	t.Helper()
	publish := func(p PublishParams) string {
		t.Helper()
		p.Namespace, p.Queue = "ns", "q"
		res, err := c.Publish(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	for range 4 {
		publish(PublishParams{})
	}
	held, err := c.Consume(ctx, ConsumeParams{Namespace: "ns", Queues: []string{"q"}, Count: 4})
	if err != nil || len(held) != 4 {
		t.Fatalf("Consume: %d jobs, %v", len(held), err)
	}
	waiting := publish(PublishParams{Delay: time.Hour})
	ready := []string{publish(PublishParams{}), publish(PublishParams{})}

	ack := func(id string, delivery int, result []byte) leaseReq {
		return leaseReq{ack: store.Ack{Namespace: "ns", Queue: "q", ID: id, Delivery: delivery, Result: result}}
	}
	consume := func(count int) leaseReq {
		return leaseReq{consume: true, req: consumeReq{ns: "ns", q: "q", count: count}}
	}
	batch := []leaseReq{
		ack(held[0].ID, held[0].Delivery, nil),
		consume(1),
		ack(held[1].ID, held[1].Delivery+1, nil), // not the delivery holding the lease
		ack(held[2].ID, store.FinishAny, nil),    // lmstfy's ack of a leased job
		ack(waiting, store.FinishAny, nil),       // lmstfy's ack of a waiting job: deletes it
		ack(held[3].ID, held[3].Delivery, []byte("kept")),
		ack(held[0].ID, held[0].Delivery, nil), // named twice: gone by then
		consume(5),
	}
	out, err := c.runLeaseBatch(ctx, "", batch)
	if err != nil {
		t.Fatal(err)
	}
	wantAck := map[int]error{0: nil, 2: ErrLeaseLost, 3: nil, 4: nil, 5: nil, 6: ErrNotFound}
	for i, want := range wantAck {
		if got := errors.Join(out[i].err, ackError(out[i].ack)); !errors.Is(got, want) || (want == nil && got != nil) {
			t.Errorf("batch[%d] (ack): %v, want %v", i, got, want)
		}
	}
	var leased []string
	for _, i := range []int{1, 7} {
		if out[i].err != nil {
			t.Fatalf("batch[%d] (consume): %v", i, out[i].err)
		}
		for _, d := range out[i].consume.jobs {
			leased = append(leased, d.ID)
		}
	}
	if len(out[1].consume.jobs) != 1 || len(out[7].consume.jobs) != 1 || !sameSet(leased, ready) {
		t.Errorf("consumes got %d and %d jobs %v, want one each of the ready jobs %v",
			len(out[1].consume.jobs), len(out[7].consume.jobs), leased, ready)
	}

	for _, id := range []string{held[0].ID, held[2].ID, waiting} {
		if _, err := c.Get(ctx, "ns", "q", id); !errors.Is(err, ErrNotFound) {
			t.Errorf("job %s after its ack: %v, want ErrNotFound", id, err)
		}
	}
	if j, err := c.Get(ctx, "ns", "q", held[1].ID); err != nil || j.State != StateLeased {
		t.Errorf("the job of the refused ack: %+v, %v; want still leased", j, err)
	}
	if j, err := c.Get(ctx, "ns", "q", held[3].ID); err != nil || j.State != StateDone || string(j.Result) != "kept" {
		t.Errorf("the job acked with a result: %+v, %v; want done with its result", j, err)
	}
	if ds, err := c.Consume(ctx, ConsumeParams{Namespace: "ns", Queues: []string{"q"}, Count: 10}); err != nil || len(ds) != 0 {
		t.Errorf("Consume after the batch: %d jobs, %v; want none (nothing acked comes back)", len(ds), err)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s]--; seen[s] < 0 {
			return false
		}
	}
	return true
}
