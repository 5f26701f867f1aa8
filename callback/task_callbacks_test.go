package callback_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// taskCallbacks returns the completion callback sink of the fixture's queue.
func (f *cbFixture) taskCallbacks(t *testing.T) *callback.TaskCallbacks {
	t.Helper()
	tc, err := callback.NewTaskCallbacks(callback.TaskCallbacksConfig{Queue: f.q, Redis: f.env.Client, SettingsTTL: time.Millisecond})
	if err != nil {
		t.Fatalf("NewTaskCallbacks: %v", err)
	}
	return tc
}

// relayWithCallbacks is a request queue whose tasks' completion callbacks go through the fixture's
// queue, with an endpoint "gen" at a real target (first call 200 "rendered", then 400) and a
// dispatcher.
func relayWithCallbacks(t *testing.T, f *cbFixture) *relay.Client {
	t.Helper()
	c := newClient(t, f.env, relay.Config{Completions: f.taskCallbacks(t)})
	target := newReceiver(t)
	target.setRespond(func(n int, w http.ResponseWriter) {
		if n > 1 {
			w.WriteHeader(http.StatusBadRequest)
		}
		_, _ = io.WriteString(w, "rendered")
	})
	setEndpoint(t, c, relay.Endpoint{Name: "gen", TargetURL: target.srv.URL, Tries: 1})
	startDispatcher(t, c, relay.DispatcherConfig{})
	return c
}

// taskCalls returns the receiver's calls, each body decoded as a task.
func taskCalls(t *testing.T, r *receiver) ([]receivedCall, []relay.TaskJSON) {
	t.Helper()
	calls := r.got()
	tasks := make([]relay.TaskJSON, len(calls))
	for i, c := range calls {
		if err := json.Unmarshal(c.body, &tasks[i]); err != nil {
			t.Fatalf("callback body %q is not a task: %v", c.body, err)
		}
	}
	return calls, tasks
}

// A task's completion callback reaches the receiver once the task ends: POSTed, signed with the
// namespace's secret, the body the task as GET /v1/tasks/{id} shows it; a 500 is retried, with
// the same webhook-id.
func TestTaskCompletionCallbackDeliveredSignedAndRetried(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		f.recv.setRespond(func(n int, w http.ResponseWriter) {
			if n == 1 {
				w.WriteHeader(http.StatusInternalServerError)
			}
		})
		f.start(t, callback.DelivererConfig{Workers: 4})
		c := relayWithCallbacks(t, f)

		res := submit(t, c, relay.SubmitParams{Endpoint: "gen", Namespace: f.ns, Body: []byte("draw"),
			Callback: &relay.Callback{URL: f.recv.srv.URL + "/hooks/done", Header: map[string]string{"X-Order": "42"}}})
		testwait.Until(t, 30*time.Second, "the retried callback", func() bool { return len(f.recv.got()) >= 2 })
		calls, tasks := taskCalls(t, f.recv)
		if len(calls) != 2 {
			t.Fatalf("%d calls, want 2 (a 500, then the retry)", len(calls))
		}
		for i, call := range calls {
			if call.method != http.MethodPost || call.path != "/hooks/done" || call.header.Get("X-Order") != "42" ||
				call.header.Get("Content-Type") != "application/json" {
				t.Fatalf("call %d: %s %s %v", i, call.method, call.path, call.header)
			}
			if err := callback.Verify(f.secret, call.header, call.body); err != nil {
				t.Fatalf("call %d: Verify: %v", i, err)
			}
			if tk := tasks[i]; tk.TaskID != res.ID || tk.TaskStatus != "completed" || tk.HTTPStatus != 200 ||
				tk.TaskResult == nil || *tk.TaskResult != "rendered" || tk.EndedAt == nil || tk.Callback == nil {
				t.Fatalf("call %d: task %+v", i, tk)
			}
		}
		if a, b := calls[0].header.Get(callback.HeaderWebhookID), calls[1].header.Get(callback.HeaderWebhookID); a == "" || a != b {
			t.Fatalf("webhook-id %q then %q: a retry keeps its id", a, b)
		}
		// A forged or tampered call does not verify.
		if err := callback.Verify(f.secret, calls[1].header, []byte(strings.Replace(string(calls[1].body), "completed", "failed", 1))); err == nil {
			t.Fatal("a tampered body verified")
		}
	})
}

// Every end calls back: failed (a 4xx), cancelled while waiting.
func TestTaskCompletionCallbackForEveryEnd(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	f.start(t, callback.DelivererConfig{Workers: 4})
	c := relayWithCallbacks(t, f)
	cb := &relay.Callback{URL: f.recv.srv.URL + "/hooks/end"}
	first := submit(t, c, relay.SubmitParams{Endpoint: "gen", Namespace: f.ns, Callback: cb})
	waitFinal(t, c, first.ID)
	failed := submit(t, c, relay.SubmitParams{Endpoint: "gen", Namespace: f.ns, Callback: cb})
	waitFinal(t, c, failed.ID)
	setEndpoint(t, c, relay.Endpoint{Name: "idle", TargetURL: "http://127.0.0.1:9/", QPS: 1e-6}) // never starts a task
	cancelled := submit(t, c, relay.SubmitParams{Endpoint: "idle", Namespace: f.ns, Callback: cb})
	if _, err := c.Cancel(ctxT(t), cancelled.ID); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "three callbacks", func() bool { return len(f.recv.got()) >= 3 })
	_, tasks := taskCalls(t, f.recv)
	got := map[string]string{}
	for _, tk := range tasks {
		got[tk.TaskID] = tk.TaskStatus
	}
	want := map[string]string{first.ID: "completed", failed.ID: "failed", cancelled.ID: "cancelled"}
	if len(tasks) != 3 || got[first.ID] != want[first.ID] || got[failed.ID] != want[failed.ID] || got[cancelled.ID] != want[cancelled.ID] {
		t.Fatalf("callbacks %v, want %v", got, want)
	}
}

// A callback URL outside the namespace's allowed destinations, or on a private address the
// namespace may not reach, refuses the task: a field error, and nothing is queued.
func TestTaskCompletionCallbackRefusedAtSubmit(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	ctx := ctxT(t)
	c := newClient(t, env, relay.Config{Completions: f.taskCallbacks(t)})
	setEndpoint(t, c, relay.Endpoint{Name: "gen", TargetURL: "http://127.0.0.1:9/"})
	// The "tight" namespace allows public prefixes and one loopback one, and no private addresses.
	for _, p := range []string{"https://hooks.example.com/in", "http://127.0.0.1:7778", "http://169.254.169.254/latest",
		"http://localhost:8080", "http://[::1]:9000"} {
		if _, err := f.store.AddDestination(ctx, "tight", p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		ns, url, field string
	}{
		{"tight", "https://hooks.example.com/elsewhere", "callback.url"},
		{"tight", "https://hooks.example.com/in/../admin", "callback.url"},
		{"tight", "https://evil.example/in", "callback.url"},
		{"other", "https://hooks.example.com/in", "callback.url"}, // another namespace's destination
		{"tight", "http://127.0.0.1:7778/v1/namespaces", "callback.url"},
		{"tight", "http://169.254.169.254/latest/meta-data", "callback.url"},
		{"tight", "http://localhost:8080/x", "callback.url"},
		{"tight", "http://[::1]:9000/x", "callback.url"},
		{"tight", "ftp://hooks.example.com/in", "callback.url"},
		{"tight", "", "callback.url"},
		{"", "https://hooks.example.com/in", "callback"}, // no namespace to sign it
	} {
		_, err := c.Submit(ctx, relay.SubmitParams{Endpoint: "gen", Namespace: tc.ns, Callback: &relay.Callback{URL: tc.url}})
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Fatalf("callback %q of %q: %v, want a field error on %s", tc.url, tc.ns, err, tc.field)
		}
	}
	for _, cb := range []relay.Callback{
		{URL: "https://hooks.example.com/in", Header: map[string]string{"webhook-signature": "forged"}},
		{URL: "https://hooks.example.com/in", Header: map[string]string{"X": "a\r\nInjected: yes"}},
		{URL: "https://hooks.example.com/in", Timeout: time.Hour},
	} {
		if _, err := c.Submit(ctx, relay.SubmitParams{Endpoint: "gen", Namespace: "tight", Callback: &cb}); !errors.Is(err, sluice.ErrInvalid) {
			t.Fatalf("callback %+v: %v, want a field error", cb, err)
		}
	}
	if st, err := c.Stats(ctx, "gen"); err != nil || st.Queued != 0 {
		t.Fatalf("%d tasks queued by refused callbacks (%v)", st.Queued, err)
	}
	// The allowed prefix passes.
	submit(t, c, relay.SubmitParams{Endpoint: "gen", Namespace: "tight", Callback: &relay.Callback{URL: "https://hooks.example.com/in/done"}})
	// Without a sink, a callback is refused rather than silently never sent.
	bare := newClient(t, env, relay.Config{})
	if _, err := bare.Submit(ctx, relay.SubmitParams{Endpoint: "gen", Namespace: "tight",
		Callback: &relay.Callback{URL: "https://hooks.example.com/in"}}); !errors.Is(err, sluice.ErrInvalid) {
		t.Fatalf("a callback without Config.Completions: %v, want a field error", err)
	}
}

// A task handed on twice (two processes, or one that died after publishing and before forgetting
// it) while its callback is pending makes one callback job.
func TestTaskCompletionsHandedOnTwiceMakeOneJob(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	tc := f.taskCallbacks(t)
	task := relay.Task{ID: "gen.01M8G5MS50EFZKYMJBGW04HQPZ", Endpoint: "gen", Namespace: f.ns, Status: relay.StatusCompleted,
		Callback: &relay.Callback{URL: f.recv.srv.URL + "/hooks/x", Timeout: time.Second}}
	for range 2 {
		if err := tc.PutCompletions(ctxT(t), task); err != nil {
			t.Fatal(err)
		}
	}
	st, err := f.q.Stats(ctxT(t), f.ns, "task-callbacks")
	if err != nil {
		t.Fatal(err)
	}
	if st.Published != 1 {
		t.Fatalf("%d callback jobs published for one task, want 1 (%+v)", st.Published, st)
	}
}
