package relay_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// flood submits n tasks of subject to endpoint from 16 goroutines.
func flood(t *testing.T, c *relay.Client, endpoint, subject string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range 16 {
		wg.Go(func() {
			for range next {
				if _, err := c.Submit(t.Context(), relay.SubmitParams{Endpoint: endpoint, Subject: subject, Body: []byte(subject)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// One subject floods a FairShare endpoint with 1,000 tasks and another with 500; a third
// subject's next task waits for at most one task of each, both when it is queued before dispatch
// starts and while the flood is being served. Without FairShare the same task waits behind the
// whole flood.
func TestFairShareBoundsTheWaitBehindAFlood(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		const held = 20 // the call the target holds until the test lets it go
		gate := make(chan struct{})
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
			if n == held {
				select {
				case <-gate:
				case <-r.Context().Done():
				}
			}
		})
		setEndpoint(t, c, relay.Endpoint{Name: "fair", TargetURL: tg.URL, Concurrency: 1, FairShare: true})
		setEndpoint(t, c, relay.Endpoint{Name: "fifo", TargetURL: newTarget(t, nil).URL, Concurrency: 1})
		flood(t, c, "fifo", "A", 1000)
		if r := submit(t, c, relay.SubmitParams{Endpoint: "fifo", Subject: "B"}); r.WaitNum != 1000 {
			t.Fatalf("without FairShare B's task has %d ahead, want the whole flood (1000)", r.WaitNum)
		}

		flood(t, c, "fair", "A", 1000)
		flood(t, c, "fair", "C", 500)
		first := submit(t, c, relay.SubmitParams{Endpoint: "fair", Subject: "B", Body: []byte("B1")})
		if first.WaitNum > 2 {
			t.Fatalf("B's first task has %d ahead, want at most 2 (one per other subject)", first.WaitNum)
		}
		startDispatcher(t, c, relay.DispatcherConfig{})
		release := sync.OnceFunc(func() { close(gate) })
		t.Cleanup(release) // before the dispatcher stops: it waits for the held call

		// The held call keeps the endpoint's one slot: nothing else starts until it returns.
		testwait.Until(t, 30*time.Second, "the held call to reach the target", func() bool {
			return tg.calls.Load() >= held
		})
		second := submit(t, c, relay.SubmitParams{Endpoint: "fair", Subject: "B", Body: []byte("B2")})
		if second.WaitNum > 2 {
			t.Fatalf("B's task queued during the flood has %d ahead, want at most 2", second.WaitNum)
		}
		release()
		if task := waitFinal(t, c, second.ID); task.Status != relay.StatusCompleted {
			t.Fatalf("B's task ended %s (%s)", task.Status, task.Error)
		}
		_, bodies := tg.snapshot()
		at := func(body string) int {
			for i, b := range bodies {
				if b == body {
					return i
				}
			}
			t.Fatalf("%s never reached the target: %s", body, strings.Join(bodies, " "))
			return -1
		}
		if i := at("B1"); i > 2 {
			t.Fatalf("B's first task was call %d, want one of the first 3: %s", i+1, strings.Join(bodies[:i+1], " "))
		}
		if i := at("B2"); i > held+2 {
			t.Fatalf("B's second task was call %d, want at most 2 calls after the held call %d: %s", i+1, held, strings.Join(bodies[held:i+1], " "))
		}
	})
}
