package queue_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

func (f *fixture) consumeCallbacks(t *testing.T, q string, n int) queue.CallbackBatch {
	t.Helper()
	b, err := f.client.ConsumeCallbacks(ctxT(t), f.ns, q, n)
	if err != nil {
		t.Fatalf("ConsumeCallbacks: %v", err)
	}
	return b
}

func TestCallbackJobsGoToTheCallbackLaneOnly(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		cb := &queue.Callback{URL: "https://example.com/hook", Header: map[string]string{"X-Order": "7"}}
		cbID := f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte(`{"order":7}`), Callback: cb, Priority: 9})
		plainID := f.publish(t, queue.PublishParams{Queue: "q", Payload: []byte("plain")})

		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 10})
		if len(ds) != 1 || ds[0].ID != plainID {
			t.Fatalf("Consume got %+v, want only the plain job %s", ds, plainID)
		}
		job, err := f.client.Get(ctx, f.ns, "q", cbID)
		if err != nil || job.State != queue.StateReady || job.Callback == nil || job.Position != 0 {
			t.Fatalf("Get = %+v, %v", job, err)
		}
		if c := job.Callback; c.URL != cb.URL || c.Method != http.MethodPost || c.Timeout != queue.DefaultCallbackTimeout || c.Header["X-Order"] != "7" {
			t.Fatalf("stored callback = %+v", c)
		}
		if job.TTR != queue.DefaultCallbackTimeout+5*time.Second {
			t.Fatalf("TTR = %s, want the callback timeout + 5s", job.TTR)
		}
		if st := f.stats(t, "q"); st.Ready != 1 || st.Leased != 1 {
			t.Fatalf("stats = %+v, want the callback job counted as ready", st)
		}
		refs, err := f.client.CallbackQueues(ctx)
		if err != nil || len(refs) != 1 || refs[0] != (queue.QueueRef{Namespace: f.ns, Queue: "q"}) {
			t.Fatalf("CallbackQueues = %v, %v", refs, err)
		}

		pend, err := f.client.Pending(ctx, queue.PendingParams{Namespace: f.ns, Queue: "q"})
		if err != nil || pend.Total != 2 || len(pend.Jobs) != 2 || pend.Jobs[0].ID != cbID || pend.Jobs[0].Position != 0 {
			t.Fatalf("Pending = %+v, %v; want the callback job listed", pend, err)
		}
		b := f.consumeCallbacks(t, "q", 10)
		if len(b.Jobs) != 1 || b.Jobs[0].ID != cbID || b.Jobs[0].Delivery.Delivery != 1 || string(b.Jobs[0].Payload) != `{"order":7}` {
			t.Fatalf("ConsumeCallbacks = %+v", b)
		}
		if j := b.Jobs[0]; j.Callback.URL != cb.URL || j.LeasedAt.Before(j.DueAt) {
			t.Fatalf("callback job = %+v", j)
		}
		if again := f.consumeCallbacks(t, "q", 10); len(again.Jobs) != 0 {
			t.Fatalf("a leased callback job was leased again: %+v", again)
		}
		d := b.Jobs[0].Delivery
		if err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery, Result: []byte("ok")}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		job, err = f.client.Get(ctx, f.ns, "q", cbID)
		if err != nil || job.State != queue.StateDone || string(job.Result) != "ok" {
			t.Fatalf("after ack Get = %+v, %v", job, err)
		}
	})
}

func TestCallbackRetryDeadRespawnStayOnTheLane(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "q", Tries: 2, Callback: &queue.Callback{URL: "http://example.com/x"}})
		nack := func(d queue.Delivery, retry time.Duration) queue.NackOutcome {
			out, err := f.client.Nack(ctx, queue.NackParams{Namespace: f.ns, Queue: "q", ID: d.ID, Delivery: d.Delivery, Error: "status 503", RetryAfter: &retry})
			if err != nil {
				t.Fatalf("Nack: %v", err)
			}
			return out
		}
		first := f.consumeCallbacks(t, "q", 1).Jobs[0]
		const retryAfter = 30 * time.Millisecond
		if out := nack(first.Delivery, retryAfter); out != queue.NackRetried {
			t.Fatalf("first nack = %s", out)
		}
		var second queue.CallbackJob
		testwait.Until(t, 30*time.Second, "the retry on the callback lane", func() bool {
			if ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}}); len(ds) != 0 {
				t.Fatalf("a consumer got the retried callback job: %+v", ds)
			}
			b := f.consumeCallbacks(t, "q", 1)
			if len(b.Jobs) == 0 && b.Wake <= 0 {
				t.Fatalf("nothing leased and nothing to wait for: %+v", b)
			}
			if len(b.Jobs) == 1 {
				second = b.Jobs[0]
			}
			return len(b.Jobs) == 1
		})
		if second.ID != id || second.Delivery.Delivery != 2 || second.LastError != "status 503" {
			t.Fatalf("retry = %+v", second)
		}
		// Not before its delay, by Redis's clock (however late this machine got to look): due at
		// least retryAfter after the first lease (the nack came after it), leased once due.
		if due := second.DueAt.Sub(first.LeasedAt); due < retryAfter || second.LeasedAt.Before(second.DueAt) {
			t.Fatalf("the retry came due %s after the first lease and was leased at %s (due %s); want at least %s and not before due",
				due, second.LeasedAt, second.DueAt, retryAfter)
		}
		if out := nack(second.Delivery, 0); out != queue.NackDead {
			t.Fatalf("last nack = %s, want dead", out)
		}
		dead, err := f.client.DeadPeek(ctx, f.ns, "q")
		if err != nil || dead.ID != id || dead.LastError != "status 503" || dead.Callback == nil {
			t.Fatalf("DeadPeek = %+v, %v", dead, err)
		}
		if got, err := f.client.DeadRespawn(ctx, queue.DeadRespawnParams{Namespace: f.ns, Queue: "q", IDs: []string{id}}); err != nil || len(got) != 1 {
			t.Fatalf("DeadRespawn = %v, %v", got, err)
		}
		if ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}}); len(ds) != 0 {
			t.Fatalf("a consumer got the respawned callback job: %+v", ds)
		}
		if b := f.consumeCallbacks(t, "q", 1); len(b.Jobs) != 1 || b.Jobs[0].ID != id || b.Jobs[0].Delivery.Delivery != 3 {
			t.Fatalf("respawned job on the lane = %+v", b)
		}
	})
}

func TestCallbackDelayedAndLeaseExpiry(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		id := f.publish(t, queue.PublishParams{Queue: "q", Delay: 50 * time.Millisecond, TTR: 100 * time.Millisecond,
			Callback: &queue.Callback{URL: "http://example.com/x", Timeout: 50 * time.Millisecond}})
		// Looked at once, the job is not due: nothing comes, and Wake says when (50ms, rounded up
		// to a ms). A machine slow to get there finds it due; either way the clock checks below
		// say it was not leased before it was due.
		var first queue.CallbackJob
		if b := f.consumeCallbacks(t, "q", 1); len(b.Jobs) == 1 {
			first = b.Jobs[0]
		} else if b.Wake <= 0 || b.Wake > 51*time.Millisecond {
			t.Fatalf("before due: %+v", b)
		}
		testwait.Until(t, 30*time.Second, "the due callback job", func() bool {
			if first.ID != "" {
				return true
			}
			b := f.consumeCallbacks(t, "q", 1)
			if len(b.Jobs) == 1 {
				first = b.Jobs[0]
			}
			return len(b.Jobs) == 1
		})
		// Due 50ms after the publish, counted from its µs on Redis's clock and rounded up to a ms.
		if gap := first.DueAt.Sub(first.PublishedAt); first.LeasedAt.Sub(first.DueAt) < 0 || gap < 50*time.Millisecond || gap > 51*time.Millisecond {
			t.Fatalf("due %s, leased %s, published %s", first.DueAt, first.LeasedAt, first.PublishedAt)
		}
		// The deliverer holding it dies: after the lease the job comes back with the same id.
		testwait.Until(t, 30*time.Second, "the redelivery after the lease", func() bool {
			b := f.consumeCallbacks(t, "q", 1)
			return len(b.Jobs) == 1 && b.Jobs[0].ID == id && b.Jobs[0].Delivery.Delivery == 2
		})
		err := f.client.Ack(ctx, queue.AckParams{Namespace: f.ns, Queue: "q", ID: id, Delivery: first.Delivery.Delivery})
		if !errors.Is(err, queue.ErrLeaseLost) {
			t.Fatalf("ack of the lost lease = %v, want ErrLeaseLost", err)
		}
	})
}

func TestCallbackLaneOfAPausedQueueWaits(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := setup(t, env, queue.Config{})
	ctx := ctxT(t)
	if err := f.client.Pause(ctx, f.ns, "q"); err != nil {
		t.Fatal(err)
	}
	id := f.publish(t, queue.PublishParams{Queue: "q", Callback: &queue.Callback{URL: "https://example.com/x"}})
	if b := f.consumeCallbacks(t, "q", 10); len(b.Jobs) != 0 {
		t.Fatalf("a paused queue's callback was leased: %+v", b)
	}
	if err := f.client.Resume(ctx, f.ns, "q"); err != nil {
		t.Fatal(err)
	}
	if b := f.consumeCallbacks(t, "q", 10); len(b.Jobs) != 1 || b.Jobs[0].ID != id {
		t.Fatalf("after resume: %+v", b)
	}
}

func TestCallbackValidation(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := setup(t, env, queue.Config{})
	for _, tc := range []struct {
		name  string
		p     queue.PublishParams
		field string
	}{
		{"no url", queue.PublishParams{Callback: &queue.Callback{}}, "callback.url"},
		{"relative", queue.PublishParams{Callback: &queue.Callback{URL: "/x"}}, "callback.url"},
		{"ftp", queue.PublishParams{Callback: &queue.Callback{URL: "ftp://a.com/x"}}, "callback.url"},
		{"userinfo", queue.PublishParams{Callback: &queue.Callback{URL: "https://u:p@a.com/x"}}, "callback.url"},
		{"method", queue.PublishParams{Callback: &queue.Callback{URL: "https://a.com", Method: "PO ST"}}, "callback.method"},
		{"method connect", queue.PublishParams{Callback: &queue.Callback{URL: "https://a.com", Method: "CONNECT"}}, "callback.method"},
		{"method lower case", queue.PublishParams{Callback: &queue.Callback{URL: "https://a.com", Method: "post"}}, "callback.method"},
		{"reserved header", queue.PublishParams{Callback: &queue.Callback{URL: "https://a.com", Header: map[string]string{"Webhook-Signature": "x"}}}, "callback.headers"},
		{"header newline", queue.PublishParams{Callback: &queue.Callback{URL: "https://a.com", Header: map[string]string{"X": "a\r\nB: c"}}}, "callback.headers"},
		{"timeout", queue.PublishParams{Callback: &queue.Callback{URL: "https://a.com", Timeout: time.Hour}}, "callback.timeout"},
		{"ttr", queue.PublishParams{TTR: time.Second, Callback: &queue.Callback{URL: "https://a.com", Timeout: time.Second}}, "ttr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.p.Namespace, tc.p.Queue = f.ns, "q"
			_, err := f.client.Publish(ctxT(t), tc.p)
			var v *sluice.FieldError
			if !errors.As(err, &v) || v.Field != tc.field {
				t.Fatalf("Publish = %v, want a validation error of %s", err, tc.field)
			}
		})
	}
}

func TestParseCallbackNotification(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{"{ns:q}": true, "{ns:q": false, "ns:q": false, "{nsq}": false, "{n s:q}": false} {
		if _, ok := queue.ParseCallbackNotification(msg); ok != want {
			t.Errorf("ParseCallbackNotification(%q) ok = %v, want %v", msg, ok, want)
		}
	}
	if ref, _ := queue.ParseCallbackNotification("{a:b}"); ref != (queue.QueueRef{Namespace: "a", Queue: "b"}) {
		t.Fatalf("ref = %+v", ref)
	}
}
