package callback_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The request queue's Client is what a Deliverer takes the slots of endpoints from.
var _ callback.EndpointSlots = (*relay.Client)(nil)

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a request queue Client on the test's prefix, closed when the test ends.
func newClient(t testing.TB, env *redistest.Env, cfg relay.Config) *relay.Client {
	t.Helper()
	cfg.Prefix = env.Prefix
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = 50 * time.Millisecond
	}
	c, err := relay.NewClient(env.Client, cfg)
	if err != nil {
		t.Fatalf("relay.NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startDispatcher runs a request queue Dispatcher until the test ends.
func startDispatcher(t *testing.T, c *relay.Client, cfg relay.DispatcherConfig) *relay.Dispatcher {
	t.Helper()
	cfg.AllowPrivate = true // httptest targets are on loopback
	cfg.MaintainInterval = 50 * time.Millisecond
	cfg.PollInterval = 200 * time.Millisecond
	d, err := relay.NewDispatcher(c, cfg)
	if err != nil {
		t.Fatalf("relay.NewDispatcher: %v", err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("Dispatcher.Start: %v", err)
	}
	t.Cleanup(d.Stop)
	return d
}

func setEndpoint(t testing.TB, c *relay.Client, e relay.Endpoint) {
	t.Helper()
	if _, err := c.SetEndpoint(ctxT(t), e); err != nil {
		t.Fatalf("SetEndpoint(%s): %v", e.Name, err)
	}
}

func submit(t testing.TB, c *relay.Client, p relay.SubmitParams) relay.SubmitResult {
	t.Helper()
	r, err := c.Submit(ctxT(t), p)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return r
}

// waitFinal waits (long-poll) until the task has ended.
func waitFinal(t testing.TB, c *relay.Client, id string) relay.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		task, err := c.Wait(ctxT(t), id, 5*time.Second)
		if err != nil {
			t.Fatalf("Wait(%s): %v", id, err)
		}
		if task.Status.Final() {
			return task
		}
	}
	t.Fatalf("task %s did not end", id)
	return relay.Task{}
}
