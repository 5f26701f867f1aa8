package queue_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// setupBehindProxy is setup with a client that reaches Redis through a proxy that can lose replies
// (go-redis then sends the call again), and the proxy.
func setupBehindProxy(t *testing.T, cfg queue.Config) (*fixture, *flakyproxy.Proxy) {
	t.Helper()
	env := redistest.New(t)
	client, proxy := flakyproxy.NewClient(t, env)
	cfg.Prefix = env.Prefix
	c, err := queue.NewClient(client, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &fixture{env: env, client: c, ns: "ns"}, proxy
}

// anyFunctionCall matches the calls of any of the named functions.
func anyFunctionCall(names ...string) flakyproxy.Match {
	return func(args []string) bool {
		for _, n := range names {
			if flakyproxy.FunctionCall(n)(args) {
				return true
			}
		}
		return false
	}
}

// A consume, an ack, a nack and a publish with a unique key whose replies are lost reach Redis
// twice (go-redis sends them again) and act once: the consumer gets the jobs the first call leased,
// the acker and nacker hear of their own success, and the publisher is not told its job is a
// duplicate of itself.
func TestRepeatedCallsActOnce(t *testing.T) {
	t.Parallel()
	f, proxy := setupBehindProxy(t, queue.Config{})
	ctx := ctxT(t)

	rule := proxy.DropReplies(flakyproxy.FunctionCall("publish"), 1)
	res, err := f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: "q", Payload: []byte("u"), UniqueKey: "k"})
	if err != nil || res.Duplicate || rule.Dropped() != 1 {
		t.Fatalf("publish with a unique key, reply lost: %+v, %v (%d dropped); want a new job", res, err, rule.Dropped())
	}
	for range 3 {
		f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte("p")})
	}

	rule = proxy.DropReplies(flakyproxy.FunctionCall("consume"), 1)
	got, err := f.client.Consume(ctx, queue.ConsumeParams{Namespace: f.ns, Queues: []string{"q"}, Count: 10, TTR: time.Minute})
	if err != nil || len(got) != 4 || rule.Dropped() != 1 {
		t.Fatalf("consume, reply lost: %d jobs, %v (%d dropped); want the 4 leased", len(got), err, rule.Dropped())
	}
	if s := f.stats(t, "q"); s.Leased != 4 || s.Consumed != 4 || s.Ready != 0 {
		t.Fatalf("after the consume: %+v, want 4 leased once", s)
	}

	rule = proxy.DropReplies(anyFunctionCall("ack", "ack_noresult"), 1)
	if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: got[0].ID, Delivery: got[0].Delivery}); err != nil || rule.Dropped() != 1 {
		t.Fatalf("ack, reply lost: %v (%d dropped); want success", err, rule.Dropped())
	}
	rule = proxy.DropReplies(anyFunctionCall("ack", "ack_noresult"), 1)
	if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: got[1].ID, Delivery: got[1].Delivery, Result: []byte("r")}); err != nil || rule.Dropped() != 1 {
		t.Fatalf("ack with a result, reply lost: %v (%d dropped); want success", err, rule.Dropped())
	}

	rule = proxy.DropReplies(flakyproxy.FunctionCall("nack"), 1)
	out, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: got[2].ID, Delivery: got[2].Delivery, Error: "e"})
	if err != nil || out != queue.NackRetried || rule.Dropped() != 1 {
		t.Fatalf("nack, reply lost: %s, %v (%d dropped); want retried", out, err, rule.Dropped())
	}
	s := f.stats(t, "q")
	if s.Acked != 2 || s.Nacked != 1 || s.Retried != 1 || s.Leased != 1 || s.Done != 1 || s.Published != 4 {
		t.Fatalf("after the ack, ack and nack: %+v; want each counted once", s)
	}
}

// A trigger whose reply is lost reaches Redis twice and publishes one job, and its caller hears of
// that job, not of a duplicate; the schedule counts one fire. So does a scheduler's fire.
func TestRepeatedTriggerActsOnce(t *testing.T) {
	t.Parallel()
	f, proxy := setupBehindProxy(t, queue.Config{})
	ctx := ctxT(t)
	f.setSchedule(t, queue.ScheduleParams{Name: "s", Cron: "0 0 1 1 *", Job: queue.JobTemplate{Queue: "q", Payload: []byte("x")}})
	rule := proxy.DropReplies(flakyproxy.FunctionCall("schedule_fire"), 1)
	res, err := f.client.Schedules().Trigger(ctx, f.ns, "s")
	if err != nil || res.Duplicate || res.JobID == "" || rule.Dropped() != 1 {
		t.Fatalf("trigger, reply lost: %+v, %v (%d dropped); want the job published", res, err, rule.Dropped())
	}
	if s := f.schedule(t, "s"); s.Fires != 1 || s.LastJobID != res.JobID {
		t.Errorf("after the trigger: fires %d, last job %s; want 1, %s", s.Fires, s.LastJobID, res.JobID)
	}
	if st := f.stats(t, "q"); st.Ready != 1 {
		t.Errorf("%d jobs ready, want 1", st.Ready)
	}

	// A scheduler's fire whose reply is lost counts the tick it fired, once.
	tick := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	f.setSchedule(t, queue.ScheduleParams{Name: "soon", Every: time.Hour, StartAt: tick, Job: queue.JobTemplate{Queue: "soon"}})
	s := queue.NewScheduler(f.client, queue.SchedulerConfig{Lookahead: 5 * time.Second})
	rule = proxy.DropReplies(flakyproxy.FunctionCall("schedule_fire"), 1)
	if _, err := s.RunOnce(ctx); err != nil || rule.Dropped() != 1 {
		t.Fatalf("a pass, fire reply lost: %v (%d dropped)", err, rule.Dropped())
	}
	if sch, st := f.schedule(t, "soon"), s.Stats(); sch.Fires != 1 || st.Fires != 1 || f.stats(t, "soon").Delayed != 1 {
		t.Errorf("after the pass: schedule fires %d, scheduler fires %d, %+v; want one job, counted once", sch.Fires, st.Fires, f.stats(t, "soon"))
	}
}
