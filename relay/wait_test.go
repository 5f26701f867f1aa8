package relay_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// Wait returns when the task ends, woken by the notification (its max is far away).
func TestWaitIsWokenWhenTheTaskEnds(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		release := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
			<-release
			_, _ = w.Write([]byte("done"))
		})
		setEndpoint(t, c, relay.Endpoint{Name: "w", TargetURL: tg.URL})
		startDispatcher(t, c, relay.DispatcherConfig{})
		id := submit(t, c, relay.SubmitParams{Endpoint: "w"}).ID

		type result struct {
			task relay.Task
			err  error
		}
		got := make(chan result, 1)
		go func() {
			task, err := c.Wait(ctxT(t), id, time.Hour)
			got <- result{task, err}
		}()
		testwait.Until(t, time.Minute, "the call", func() bool { return tg.inFlight.Load() == 1 })
		select {
		case r := <-got:
			t.Fatalf("Wait returned before the task ended: %s %v", r.task.Status, r.err)
		default:
		}
		once.Do(func() { close(release) })
		r := <-got
		if r.err != nil || r.task.Status != relay.StatusCompleted || string(r.task.Result) != "done" {
			t.Fatalf("Wait = %s %q, %v", r.task.Status, r.task.Result, r.err)
		}
	})
}

func TestWaitReturnsAtMaxAndOnContextAndClose(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "idle", TargetURL: "https://x.example.com/"})
	id := submit(t, c, relay.SubmitParams{Endpoint: "idle"}).ID
	task, err := c.Wait(ctxT(t), id, 20*time.Millisecond)
	if err != nil || task.Status != relay.StatusPending {
		t.Fatalf("Wait(max) = %s, %v; want pending, nil", task.Status, err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	if _, err := c.Wait(ctx, id, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait(cancelled ctx) = %v", err)
	}
	if _, err := c.Wait(ctxT(t), "idle.00000000000000000000000000", time.Hour); !errors.Is(err, relay.ErrNotFound) {
		t.Fatalf("Wait(unknown) = %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Wait(ctxT(t), id, time.Hour)
		done <- err
	}()
	// Close wakes the waiter; whether it was registered yet or not, it ends with ErrClosed.
	_ = c.Close()
	if err := <-done; !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("Wait after Close = %v, want ErrClosed", err)
	}
}
