package queuetest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queuetest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

type email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// setup returns a client on the test's own key prefix.
func setup(t *testing.T) (context.Context, *queue.Client) {
	t.Helper()
	env := redistest.New(t)
	c := queuetest.NewClientFrom(t, env.Client, queue.Config{Prefix: env.Prefix})
	return t.Context(), c
}

func publish(t *testing.T, c *queue.Client, p queue.PublishParams) string {
	t.Helper()
	if p.Namespace == "" {
		p.Namespace = "ns"
	}
	res, err := c.Publish(t.Context(), p)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return res.ID
}

// recorder is a testing.TB that records failures instead of failing the test, so tests can show
// that the helpers fail when they should. Fatalf ends the calling goroutine, as testing.T's does:
// run the helper with recorder.run.
type recorder struct {
	testing.TB // the real test, for Cleanup and Context
	mu         sync.Mutex
	failures   []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// run calls f with the recorder on a goroutine of its own and returns the failure it reported
// ("" when it passed).
func run(t *testing.T, f func(tb testing.TB)) string {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return strings.Join(r.failures, "\n")
}

func TestNewClientFromURL(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := queuetest.NewClient(t, env.URL, queue.Config{Prefix: env.Prefix})
	id := publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("x")})
	if j := queuetest.RequireEnqueued(t.Context(), t, c, "ns", "q", []byte("x"), nil); j.ID != id {
		t.Fatalf("RequireEnqueued returned %s, want %s", j.ID, id)
	}
	if msg := run(t, func(tb testing.TB) { queuetest.NewClient(tb, "http://nowhere", queue.Config{}) }); !strings.Contains(msg, "unsupported scheme") {
		t.Fatalf("NewClient with a bad URL reported %q", msg)
	}
}

func TestRequireEnqueued(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte(`{"to":"a@x","subject":"hi"}`)})
	want := publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte(`{"to":"b@x","subject":"hi"}`),
		Priority: 3, Delay: time.Hour, Attributes: map[string]string{"tenant": "t1", "trace": "z"}, UniqueKey: "b"})

	// JSON payloads compare as values: key order and spacing do not matter.
	j := queuetest.RequireEnqueued(ctx, t, c, "ns", "q", []byte(`{"subject": "hi", "to": "b@x"}`), &queuetest.Opts{
		State: queue.StateDelayed, Priority: 3, MinDelay: 30 * time.Minute,
		Attributes: map[string]string{"tenant": "t1"}, UniqueKey: "b", Tries: 3,
	})
	if j.ID != want {
		t.Fatalf("RequireEnqueued returned %s, want %s", j.ID, want)
	}
	// A nil payload matches any job; the first in consume order comes back.
	if j := queuetest.RequireEnqueued(ctx, t, c, "ns", "q", nil, &queuetest.Opts{State: queue.StateReady}); string(j.Payload) != `{"to":"a@x","subject":"hi"}` {
		t.Fatalf("RequireEnqueued(any ready) = %s", j.Payload)
	}

	for name, tc := range map[string]struct {
		payload string
		opts    *queuetest.Opts
		differs string
	}{
		"payload":   {`{"to":"c@x","subject":"hi"}`, nil, "differs in: payload"},
		"state":     {`{"to":"b@x","subject":"hi"}`, &queuetest.Opts{State: queue.StateReady}, "differs in: state"},
		"priority":  {`{"to":"b@x","subject":"hi"}`, &queuetest.Opts{Priority: 4}, "differs in: priority"},
		"delay":     {`{"to":"b@x","subject":"hi"}`, &queuetest.Opts{MinDelay: 2 * time.Hour}, "differs in: delay"},
		"attribute": {`{"to":"b@x","subject":"hi"}`, &queuetest.Opts{Attributes: map[string]string{"tenant": "t2"}}, "differs in: attribute tenant"},
		"unique":    {`{"to":"b@x","subject":"hi"}`, &queuetest.Opts{UniqueKey: "c"}, "differs in: unique key"},
		"tries":     {`{"to":"b@x","subject":"hi"}`, &queuetest.Opts{Tries: 9}, "differs in: tries"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			msg := run(t, func(tb testing.TB) {
				queuetest.RequireEnqueued(ctx, tb, c, "ns", "q", []byte(tc.payload), tc.opts)
				tb.Errorf("RequireEnqueued returned after failing")
			})
			// The message names what was looked for and lists what the queue held.
			for _, part := range []string{"no job in ns/q", "the queue holds 2 pending job(s)", want + ": delayed, priority 3",
				`"{\"to\":\"a@x\",\"subject\":\"hi\"}"`, "attributes map[tenant:t1 trace:z]", tc.differs} {
				if !strings.Contains(msg, part) {
					t.Errorf("failure message lacks %q:\n%s", part, msg)
				}
			}
			if strings.Contains(msg, "returned after failing") {
				t.Errorf("RequireEnqueued went on after Fatalf")
			}
		})
	}
}

func TestRequireEnqueuedEmptyQueue(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	msg := run(t, func(tb testing.TB) { queuetest.RequireEnqueued(ctx, tb, c, "ns", "empty", []byte("x"), nil) })
	if !strings.Contains(msg, `no job in ns/empty with payload "x"`) || !strings.Contains(msg, "the queue holds no pending job") {
		t.Fatalf("failure message: %q", msg)
	}
}

// Jobs that are finished (acked, dead) are not enqueued any more.
func TestRequireEnqueuedIgnoresFinishedJobs(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("done"), Tries: 1})
	ds, err := c.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"q"}})
	if err != nil || len(ds) != 1 {
		t.Fatalf("Consume = %v, %v", ds, err)
	}
	if _, err := c.Nack(ctx, queue.NackParams{Namespace: "ns", Queue: "q", ID: ds[0].ID, Delivery: ds[0].Delivery}); err != nil {
		t.Fatal(err)
	}
	queuetest.RequireNotEnqueued(ctx, t, c, "ns", "q", nil, nil)
	if msg := run(t, func(tb testing.TB) { queuetest.RequireEnqueued(ctx, tb, c, "ns", "q", []byte("done"), nil) }); msg == "" {
		t.Fatal("RequireEnqueued passed on a dead job")
	}
}

func TestRequireNotEnqueued(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	queuetest.RequireNotEnqueued(ctx, t, c, "ns", "q", nil, nil)
	id := publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("a"), Priority: 2})
	queuetest.RequireNotEnqueued(ctx, t, c, "ns", "q", []byte("b"), nil)
	queuetest.RequireNotEnqueued(ctx, t, c, "ns", "q", []byte("a"), &queuetest.Opts{Priority: 1})
	queuetest.RequireNotEnqueued(ctx, t, c, "ns", "other", nil, nil)

	msg := run(t, func(tb testing.TB) { queuetest.RequireNotEnqueued(ctx, tb, c, "ns", "q", []byte("a"), nil) })
	if !strings.Contains(msg, `ns/q holds 1 job(s) with payload "a", want none`) || !strings.Contains(msg, id+": ready, priority 2") {
		t.Fatalf("failure message: %q", msg)
	}
	msg = run(t, func(tb testing.TB) {
		queuetest.RequireNotEnqueued(ctx, tb, c, "ns", "q", nil, &queuetest.Opts{Priority: 2})
	})
	if !strings.Contains(msg, "with payload (any), priority 2, want none") {
		t.Fatalf("failure message: %q", msg)
	}
}

func TestRequireEnqueuedValue(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	q, err := queue.NewQueue[email](c, "ns", "mail", queue.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := q.Produce(ctx, &email{To: "a@x", Subject: "hi"}, 0, queue.WithPriority(7))
	if err != nil {
		t.Fatal(err)
	}
	if j := queuetest.RequireEnqueuedValue(ctx, t, q, &email{To: "a@x", Subject: "hi"}, &queuetest.Opts{Priority: 7}); j.ID != id {
		t.Fatalf("RequireEnqueuedValue returned %s, want %s", j.ID, id)
	}
	queuetest.RequireNotEnqueuedValue(ctx, t, q, &email{To: "b@x", Subject: "hi"}, nil)

	msg := run(t, func(tb testing.TB) { queuetest.RequireEnqueuedValue(ctx, tb, q, &email{To: "b@x"}, nil) })
	if !strings.Contains(msg, "no job in ns/mail with payload {To:b@x Subject:}") || !strings.Contains(msg, "payload (decodes to {To:a@x Subject:hi})") {
		t.Fatalf("failure message: %q", msg)
	}
	msg = run(t, func(tb testing.TB) {
		queuetest.RequireNotEnqueuedValue(ctx, tb, q, &email{To: "a@x", Subject: "hi"}, nil)
	})
	if !strings.Contains(msg, "ns/mail holds 1 job(s) with payload {To:a@x Subject:hi}, want none") {
		t.Fatalf("failure message: %q", msg)
	}
}

func TestDrain(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	ok := publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("ok")})
	fails := publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("fail"), Tries: 2})
	final := publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("skip")})
	panics := publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("panic"), Tries: 1})
	later := publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("later"), Delay: time.Hour})

	var seen []string
	res := queuetest.Drain(ctx, t, c, "ns", "q", func(ctx context.Context, d *queue.Delivery) error {
		if fromCtx, ok := queue.DeliveryFromContext(ctx); !ok || fromCtx.ID != d.ID {
			t.Errorf("the handler's context carries %+v, %v", fromCtx, ok)
		}
		seen = append(seen, string(d.Payload))
		switch string(d.Payload) {
		case "fail":
			return errors.New("boom")
		case "skip":
			return queue.SkipRetry(errors.New("bad input"))
		case "panic":
			panic("oops")
		}
		return nil
	}, nil)

	if got := strings.Join(seen, ","); got != "ok,fail,skip,panic" {
		t.Fatalf("ran %s, want ok,fail,skip,panic (the delayed job is not due)", got)
	}
	want := map[string]queuetest.Outcome{ok: queuetest.Acked, fails: queuetest.Retried, final: queuetest.Dead, panics: queuetest.Dead}
	for _, r := range res.Runs {
		if r.Outcome != want[r.Delivery.ID] {
			t.Errorf("job %s (%s): outcome %s, want %s", r.Delivery.ID, r.Delivery.Payload, r.Outcome, want[r.Delivery.ID])
		}
	}
	var pe *queue.PanicError
	if errs := res.Errors(); len(errs) != 3 || errs[0].Error() != "boom" || !errors.As(errs[2], &pe) || pe.Value != "oops" {
		t.Fatalf("Errors = %v", errs)
	}
	if res.Count(queuetest.Acked) != 1 || res.Count(queuetest.Dead) != 2 || res.Count(queuetest.Retried) != 1 {
		t.Fatalf("counts: %+v", res.Runs)
	}
	// The failed job waits for its retry with its error; the ok one is gone; the delayed one stays.
	j := queuetest.RequireEnqueued(ctx, t, c, "ns", "q", []byte("fail"), &queuetest.Opts{State: queue.StateDelayed})
	if j.LastError != "boom" || j.RemainingTries != 1 {
		t.Fatalf("failed job after Drain: %+v", j)
	}
	queuetest.RequireNotEnqueued(ctx, t, c, "ns", "q", []byte("ok"), nil)
	queuetest.RequireEnqueued(ctx, t, c, "ns", "q", []byte("later"), nil)
	if dead, err := c.DeadSize(ctx, "ns", "q"); err != nil || dead != 2 {
		t.Fatalf("DeadSize = %d, %v; want 2", dead, err)
	}
	_ = later
}

// With a retry policy that answers 0, a failing job runs again in the same Drain until its tries
// run out.
func TestDrainRetriesNow(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("x"), Tries: 3})
	now := queue.RetryPolicyFunc(func(int, error) time.Duration { return 0 })
	attempts := 0
	res := queuetest.Drain(ctx, t, c, "ns", "q", func(context.Context, *queue.Delivery) error {
		attempts++
		if attempts < 3 {
			return fmt.Errorf("attempt %d", attempts)
		}
		return nil
	}, &queuetest.DrainOpts{RetryPolicy: now})
	var outcomes []string
	for _, r := range res.Runs {
		outcomes = append(outcomes, fmt.Sprintf("%d:%s", r.Delivery.Delivery, r.Outcome))
	}
	if got := strings.Join(outcomes, ","); got != "1:retried,2:retried,3:acked" {
		t.Fatalf("runs %s", got)
	}
}

func TestDrainMaxRuns(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	publish(t, c, queue.PublishParams{Queue: "q", Payload: []byte("x")})
	msg := run(t, func(tb testing.TB) {
		// A handler that queues a new ready job for every one it runs never drains the queue.
		queuetest.Drain(ctx, tb, c, "ns", "q", func(ctx context.Context, d *queue.Delivery) error {
			_, err := c.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("x")})
			return err
		}, &queuetest.DrainOpts{MaxRuns: 5})
	})
	if !strings.Contains(msg, "still a ready job after 5 runs") {
		t.Fatalf("failure message: %q", msg)
	}
}

func TestDrainQueue(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	q, err := queue.NewQueue[email](c, "ns", "mail", queue.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Produce(ctx, &email{To: "a@x", Subject: "hi"}, 0); err != nil {
		t.Fatal(err)
	}
	publish(t, c, queue.PublishParams{Queue: "mail", Payload: []byte("not json")})
	var sent []email
	res := queuetest.DrainQueue(ctx, t, q, func(_ context.Context, e *email) error {
		sent = append(sent, *e)
		return nil
	}, nil)
	if len(sent) != 1 || sent[0].To != "a@x" {
		t.Fatalf("handled %+v", sent)
	}
	if len(res.Runs) != 2 || res.Runs[0].Outcome != queuetest.Acked || res.Runs[1].Outcome != queuetest.Dead ||
		!strings.Contains(res.Runs[1].Err.Error(), "decode payload") {
		t.Fatalf("runs %+v", res.Runs)
	}
}

func TestDrainFailsWhenConsumeFails(t *testing.T) {
	t.Parallel()
	ctx, c := setup(t)
	msg := run(t, func(tb testing.TB) {
		queuetest.Drain(ctx, tb, c, "bad namespace!", "q", func(context.Context, *queue.Delivery) error { return nil }, nil)
	})
	if !strings.Contains(msg, "queuetest: drain bad namespace!/q: consume:") {
		t.Fatalf("failure message: %q", msg)
	}
}
