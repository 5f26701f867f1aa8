package queue_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// listAll pages through a state with page size limit and returns the ids in order.
func listAll(t *testing.T, f *fixture, q string, state queue.ListState, limit int) (ids []string, pages int) {
	t.Helper()
	cursor := ""
	for {
		res, err := f.client.ListJobs(ctxT(t), queue.ListJobsParams{Namespace: f.ns, Queue: q, State: state, Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListJobs(%s): %v", state, err)
		}
		pages++
		for _, j := range res.Jobs {
			ids = append(ids, j.ID)
		}
		if res.NextCursor == "" {
			return ids, pages
		}
		cursor = res.NextCursor
	}
}

// Every state lists its jobs, in its order, page by page; retrying and scheduled jobs, which
// share the delayed set, are told apart; payloads are cut to a preview.
func TestListJobsByState(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		var ready []string
		for i := range 5 {
			ready = append(ready, f.publish(t, queue.PublishParams{Queue: "q", Priority: i % 2, Payload: []byte(strings.Repeat("p", 1000))}))
		}
		// Consumers take priority 1 first, FIFO within it.
		want := []string{ready[1], ready[3], ready[0], ready[2], ready[4]}
		got, pages := listAll(t, f, "q", queue.ListReady, 2)
		if strings.Join(got, ",") != strings.Join(want, ",") || pages != 3 {
			t.Fatalf("ready = %v in %d pages, want %v in 3", got, pages, want)
		}
		res, err := f.client.ListJobs(ctx, queue.ListJobsParams{Namespace: f.ns, Queue: "q", State: queue.ListReady, Limit: 2, Cursor: "2"})
		if err != nil || res.Total != 5 || res.Jobs[0].Position != 2 || len(res.Jobs[0].Payload) != queue.ListPreviewBytes {
			t.Fatalf("second page = %+v, %v", res, err)
		}

		later := f.publish(t, queue.PublishParams{Queue: "q", Delay: time.Hour})
		// A delivery that failed waits for its backoff: retrying.
		failing := f.publish(t, queue.PublishParams{Queue: "r", Tries: 3})
		d := f.consumeOne(t, "r")
		retry := time.Hour
		if _, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "r", ID: d.ID, Delivery: d.Delivery, Error: "boom", RetryAfter: &retry}); err != nil {
			t.Fatal(err)
		}
		f.publish(t, queue.PublishParams{Queue: "r", Delay: time.Minute})
		if got, _ := listAll(t, f, "q", queue.ListScheduled, 10); len(got) != 1 || got[0] != later {
			t.Fatalf("scheduled = %v", got)
		}
		res, err = f.client.ListJobs(ctx, queue.ListJobsParams{Namespace: f.ns, Queue: "r", State: queue.ListRetrying})
		if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != failing || res.Jobs[0].LastError != "boom" || res.Jobs[0].DueAt.IsZero() {
			t.Fatalf("retrying = %+v, %v", res, err)
		}
		split, err := f.client.SplitDelayed(ctx, f.ns, "r")
		if err != nil || split != (queue.DelayedSplit{Scheduled: 1, Retrying: 1, Exact: true}) {
			t.Fatalf("SplitDelayed = %+v, %v", split, err)
		}

		// Leased jobs show their delivery and lease end.
		held := f.consumeOne(t, "q")
		res, err = f.client.ListJobs(ctx, queue.ListJobsParams{Namespace: f.ns, Queue: "q", State: queue.ListLeased})
		if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ID != held.ID || res.Jobs[0].Deliveries != 1 || !res.Jobs[0].LeaseUntil.Equal(held.LeaseUntil) {
			t.Fatalf("leased = %+v, %v (delivery %+v)", res, err, held)
		}
		// Done jobs, newest first, with their result; dead ones oldest first.
		if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: held.ID, Delivery: held.Delivery, Result: []byte("r1")}); err != nil {
			t.Fatal(err)
		}
		res, err = f.client.ListJobs(ctx, queue.ListJobsParams{Namespace: f.ns, Queue: "q", State: queue.ListDone})
		if err != nil || len(res.Jobs) != 1 || string(res.Jobs[0].Result) != "r1" || len(res.Jobs[0].Payload) != 0 {
			t.Fatalf("done = %+v, %v", res, err)
		}
		if _, err := f.client.ListJobs(ctx, queue.ListJobsParams{Namespace: f.ns, Queue: "q", State: "lost"}); !isField(err, "state") {
			t.Fatalf("unknown state: %v", err)
		}
		if _, err := f.client.ListJobs(ctx, queue.ListJobsParams{Namespace: f.ns, Queue: "q", State: queue.ListReady, Limit: queue.MaxListPage + 1}); !isField(err, "limit") {
			t.Fatalf("limit over the bound: %v", err)
		}
		if _, err := f.client.ListJobs(ctx, queue.ListJobsParams{Namespace: f.ns, Queue: "q", State: queue.ListReady, Cursor: "-1"}); !isField(err, "cursor") {
			t.Fatalf("bad cursor: %v", err)
		}
	})
}

func isField(err error, field string) bool {
	var fe *sluice.FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// Run now makes scheduled and retrying jobs ready at once and passes over the others; a new
// priority moves a ready job to its new line.
func TestRunNowAndSetPriority(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		a := f.publish(t, queue.PublishParams{Queue: "q"})
		b := f.publish(t, queue.PublishParams{Queue: "q"})
		later := f.publish(t, queue.PublishParams{Queue: "q", Delay: time.Hour})
		moved, err := f.client.RunNow(ctx, f.ns, "q", later, a, "missing")
		if err != nil || len(moved) != 1 || moved[0] != later {
			t.Fatalf("RunNow = %v, %v", moved, err)
		}
		if j, _ := f.client.Get(ctx, f.ns, "q", later); j.State != queue.StateReady || j.Position != 2 {
			t.Fatalf("after run now: %+v", j)
		}
		changed, err := f.client.SetPriority(ctx, f.ns, "q", 7, b)
		if err != nil || len(changed) != 1 {
			t.Fatalf("SetPriority = %v, %v", changed, err)
		}
		if d := f.consumeOne(t, "q"); d.ID != b || d.Priority != 7 {
			t.Fatalf("first delivery after a new priority = %+v, want %s", d, b)
		}
		if changed, _ := f.client.SetPriority(ctx, f.ns, "q", 7, b); len(changed) != 0 {
			t.Fatalf("the same priority again changed %v", changed)
		}
		if _, err := f.client.SetPriority(ctx, f.ns, "q", queue.MaxPriority+1, a); !isField(err, "priority") {
			t.Fatalf("priority out of range: %v", err)
		}
		if s := f.stats(t, "q"); s.Ready != 2 || s.Delayed != 0 || s.Leased != 1 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

// A unique key finds its pending holder, and nothing once the holder is finished.
func TestGetByUniqueKey(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "q", UniqueKey: "order-42"})
		j, err := f.client.GetByUniqueKey(ctx, f.ns, "q", "order-42")
		if err != nil || j.ID != id {
			t.Fatalf("GetByUniqueKey = %+v, %v", j, err)
		}
		if _, err := f.client.GetByUniqueKey(ctx, f.ns, "other", "order-42"); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("another queue's key: %v", err)
		}
		d := f.consumeOne(t, "q")
		if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.client.GetByUniqueKey(ctx, f.ns, "q", "order-42"); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("after ack: %v", err)
		}
	})
}

// Each try of a callback job is recorded with its outcome by the call that records the outcome;
// a try whose lease was lost records nothing; the list keeps the latest MaxCallbackAttempts.
func TestFinishCallbackRecordsAttempts(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "q", Tries: 3, Callback: &queue.Callback{URL: "http://example.com/x"}})
		zero := time.Duration(0)
		b := f.consumeCallbacks(t, "q", 1)
		sent := time.Now().Add(-time.Second).Truncate(time.Millisecond)
		out, err := f.client.FinishCallback(ctx, queue.FinishCallbackParams{
			Namespace: f.ns, Queue: "q", ID: id, Delivery: b.Jobs[0].Delivery.Delivery, RetryAfter: &zero,
			Attempt: queue.CallbackAttempt{At: sent, Status: 503, Latency: 1500 * time.Microsecond, Error: "HTTP 503"},
		})
		if err != nil || out != "retried" {
			t.Fatalf("failed try = %q, %v", out, err)
		}
		// The same delivery again (a resent call) is refused and records nothing.
		if _, err := f.client.FinishCallback(ctx, queue.FinishCallbackParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: b.Jobs[0].Delivery.Delivery}); !errors.Is(err, queue.ErrLeaseLost) {
			t.Fatalf("second finish of one delivery: %v", err)
		}
		b = f.consumeCallbacks(t, "q", 1)
		out, err = f.client.FinishCallback(ctx, queue.FinishCallbackParams{
			Namespace: f.ns, Queue: "q", ID: id, Delivery: b.Jobs[0].Delivery.Delivery, Delivered: true, Result: []byte("thanks"),
			Attempt: queue.CallbackAttempt{At: time.Now(), Status: 200, Latency: time.Millisecond},
		})
		if err != nil || out != "delivered" {
			t.Fatalf("delivered try = %q, %v", out, err)
		}
		j, err := f.client.Get(ctx, f.ns, "q", id)
		if err != nil || j.State != queue.StateDone || string(j.Result) != "thanks" || j.Deliveries != 2 {
			t.Fatalf("job = %+v, %v", j, err)
		}
		tries, err := f.client.CallbackAttempts(ctx, f.ns, "q", id)
		if err != nil || len(tries) != 2 {
			t.Fatalf("attempts = %+v, %v", tries, err)
		}
		first, last := tries[1], tries[0]
		if first.Delivery != 1 || first.Status != 503 || first.Outcome != "retried" || first.Error != "HTTP 503" ||
			!first.At.Equal(sent) || first.Latency != 1500*time.Microsecond {
			t.Fatalf("first attempt = %+v", first)
		}
		if last.Delivery != 2 || last.Status != 200 || last.Outcome != "delivered" || last.Error != "" {
			t.Fatalf("last attempt = %+v", last)
		}
		if s := f.stats(t, "q"); s.Acked != 1 || s.Nacked != 1 || s.Done != 1 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

// Past the 256 delayed records one call reads, the split counts say so (not exact) and the pages
// of scheduled jobs still reach every job, in due order.
func TestListScheduledPastOneCallsRead(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		var ps []queue.PublishParams
		for i := range 300 {
			ps = append(ps, queue.PublishParams{Namespace: f.ns, Queue: "q", Delay: time.Hour + time.Duration(i)*time.Second})
		}
		res, err := f.client.PublishMany(ctx, ps)
		if err != nil {
			t.Fatal(err)
		}
		split, err := f.client.SplitDelayed(ctx, f.ns, "q")
		if err != nil || split != (queue.DelayedSplit{Scheduled: 256, Retrying: 0, Exact: false}) {
			t.Fatalf("SplitDelayed = %+v, %v", split, err)
		}
		got, pages := listAll(t, f, "q", queue.ListScheduled, 100)
		if len(got) != 300 || pages != 3 || got[0] != res[0].ID || got[299] != res[299].ID {
			t.Fatalf("scheduled: %d jobs in %d pages", len(got), pages)
		}
		// The retrying pages read 256 records a call: none found, but a cursor to go on with.
		page, err := f.client.ListJobs(ctx, queue.ListJobsParams{Namespace: f.ns, Queue: "q", State: queue.ListRetrying})
		if err != nil || len(page.Jobs) != 0 || page.NextCursor != "256" {
			t.Fatalf("retrying page = %+v, %v", page, err)
		}
	})
}
