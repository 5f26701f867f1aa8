package relay

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// recordingSink is a CompletionSink that keeps what it is handed (or fails while fail is set).
type recordingSink struct {
	mu   sync.Mutex
	got  []Task
	fail bool
}

func (s *recordingSink) CheckCallback(context.Context, string, Callback) error { return nil }

func (s *recordingSink) PutCompletions(_ context.Context, tasks ...Task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("sink down")
	}
	s.got = append(s.got, tasks...)
	return nil
}

func (s *recordingSink) handed() []Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Task(nil), s.got...)
}

func (s *recordingSink) setFail(v bool) {
	s.mu.Lock()
	s.fail = v
	s.mu.Unlock()
}

// endedWithCallback submits a task with a completion callback to a new endpoint and cancels it:
// it has ended, and its callback waits to be handed on.
func endedWithCallback(t *testing.T, c *Client) string {
	t.Helper()
	ctx := t.Context()
	if _, err := c.SetEndpoint(ctx, Endpoint{Name: "cb", TargetURL: "http://127.0.0.1:9/"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Submit(ctx, SubmitParams{Endpoint: "cb", Namespace: "shop",
		Callback: &Callback{URL: "https://hooks.example.com/done", Header: map[string]string{"X-A": "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// The end of a task marks its callback in the same script, so nothing is lost: a process that
// claimed it and died leaves it to the next claim after the claim's end, and a sink that fails
// leaves it to the next pass. Once handed on, it is forgotten.
func TestCompletionCallbackSurvivesADeadClaimerAndAFailingSink(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		sink := &recordingSink{}
		c := internalClient(t, env, Config{Completions: sink})
		ctx := t.Context()
		id := endedWithCallback(t, c)

		// A process claims it for 300 ms and dies before handing it on.
		if raw, err := c.run(ctx, scriptClaimCompletions, "cb", 10, 300).Slice(); err != nil || len(raw) != 1 {
			t.Fatalf("claim = %v, %v; want the one task", raw, err)
		}
		if n, err := c.forwardCompletions(ctx, "cb"); err != nil || n != 0 {
			t.Fatalf("while claimed: %d handed on (%v), want 0", n, err)
		}
		// A failing sink hands on nothing and keeps it.
		sink.setFail(true)
		testwait.Until(t, time.Minute, "the claim to end", func() bool {
			_, err := c.forwardCompletions(ctx, "cb")
			return err != nil
		})
		sink.setFail(false)
		var handed []Task
		testwait.Until(t, 60*time.Second, "the callback handed on", func() bool {
			if _, err := c.MaintainOnce(ctx); err != nil {
				t.Fatal(err)
			}
			handed = sink.handed()
			return len(handed) > 0
		})
		got := handed[0]
		if len(handed) != 1 || got.ID != id || got.Status != StatusCancelled || got.Namespace != "shop" || got.Callback == nil ||
			got.Callback.URL != "https://hooks.example.com/done" || got.Callback.Header["X-A"] != "1" || got.Callback.Timeout != 30*time.Second {
			t.Fatalf("handed on %+v", handed)
		}
		if n, err := env.Client.ZCard(ctx, c.keys.get("cb").completions()).Result(); err != nil || n != 0 {
			t.Fatalf("%d callbacks still marked after the hand-off (%v)", n, err)
		}
		if res, err := c.MaintainOnce(ctx); err != nil || res.Completions != 0 || len(sink.handed()) != 1 {
			t.Fatalf("a later pass handed on %d more (%v)", res.Completions, err)
		}
	})
}

// Reading the final status does not drop a task whose callback waits to be handed on (the read
// retention would otherwise end it first); once handed on, the read retention applies.
func TestCompletionCallbackKeepsTheTaskUntilHandedOn(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	sink := &recordingSink{fail: true}
	c := internalClient(t, env, Config{Completions: sink, ReadRetention: time.Second})
	ctx := t.Context()
	id := endedWithCallback(t, c)
	if _, err := c.Get(ctx, id); err != nil { // the caller reads the final status
		t.Fatal(err)
	}
	task := c.keys.get("cb").task(id)
	if ttl := env.Client.PTTL(ctx, task).Val(); ttl <= time.Second {
		t.Fatalf("the read shortened the task to %s while its callback waits", ttl)
	}
	sink.setFail(false)
	if n, err := c.forwardCompletions(ctx, "cb"); err != nil || n != 1 {
		t.Fatalf("handed on %d (%v), want 1", n, err)
	}
	if ttl := env.Client.PTTL(ctx, task).Val(); ttl <= 0 || ttl > time.Second {
		t.Fatalf("after the hand-off the read task lives %s, want the read retention (1s)", ttl)
	}
}
