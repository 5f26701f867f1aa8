package callback_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
)

// peakRecorder makes a receiver record its peak number of calls in flight, holding each call
// open a little so that overlaps show.
func peakRecorder(f *cbFixture) *atomic.Int64 {
	var inFlight atomic.Int64
	peak := new(atomic.Int64)
	f.recv.setRespond(func(int, http.ResponseWriter) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond) // the call's work: held open, so that overlaps show
		inFlight.Add(-1)
	})
	return peak
}

// events collects a deliverer's events.
type events struct {
	mu  sync.Mutex
	all []callback.Event
}

func (e *events) add(ev callback.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

func (e *events) list() []callback.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]callback.Event(nil), e.all...)
}

// atLeast waits until n events came (a try's event follows its count in the deliverer's stats)
// and returns them all, so that a test looking through them looks at every try it counted.
func (e *events) atLeast(t *testing.T, n int) []callback.Event {
	t.Helper()
	testwait.Until(t, time.Minute, fmt.Sprintf("%d delivery events", n), func() bool { return len(e.list()) >= n })
	return e.list()
}

// Relay tasks and callbacks to one service share its endpoint's Concurrency: with tasks submitted
// and callbacks due at once, from one dispatcher and two deliverers, the service never sees more
// than 2 calls at a time, and everything completes. A callback counts on the endpoint with the
// longest target URL that covers it.
func TestCallbacksShareEndpointConcurrencyWithTasks(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := newCallbackFixture(t, env)
		peak := peakRecorder(f)
		c := newClient(t, env, relay.Config{})
		c2 := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "wide", TargetURL: f.recv.srv.URL + "/hooks", Concurrency: 100})
		setEndpoint(t, c, relay.Endpoint{Name: "svc", TargetURL: f.recv.srv.URL + "/hooks/svc", Concurrency: 2})
		startDispatcher(t, c, relay.DispatcherConfig{Workers: 8})
		var evs events
		a := f.start(t, callback.DelivererConfig{Workers: 8, Relay: c, OnDelivery: evs.add})
		b := f.start(t, callback.DelivererConfig{Workers: 8, Relay: c2, OnDelivery: evs.add})

		const n = 30
		f.callbacksAndTasks(t, c, n, "/svc/order")
		testwait.Until(t, 30*time.Second, "every callback delivered", func() bool {
			return a.Stats().Delivered+b.Stats().Delivered == n
		})
		if p := peak.Load(); p > 2 {
			t.Fatalf("the service saw %d calls at once, over its endpoint's concurrency of 2", p)
		}
		if got := len(f.recv.got()); got != 2*n {
			t.Fatalf("the service got %d calls, want %d", got, 2*n)
		}
		st, err := c.Stats(ctxT(t), "svc")
		if err != nil {
			t.Fatal(err)
		}
		// Every callback try held a slot; released tries (the slot wait ran out) held none.
		released := 0
		for _, ev := range evs.atLeast(t, n) {
			if ev.Endpoint != "svc" {
				t.Fatalf("event %+v: want endpoint svc (the longest target URL covering the callback)", ev)
			}
			if ev.Outcome == callback.OutcomeReleased {
				released++
			}
		}
		if st.SlotsReleased != n || st.Slots != 0 || st.Running != 0 {
			t.Fatalf("svc stats = %+v (%d tries released); want %d slots released and none held", st, released, n)
		}
		if wide, err := c.Stats(ctxT(t), "wide"); err != nil || wide.SlotsReleased != 0 {
			t.Fatalf("wide stats = %+v, %v; want no slot taken on it", wide, err)
		}
	})
}

// Tasks and callbacks share the endpoint's QPS: 10 of each at QPS 20 reach the service spread
// over at least 19 intervals, measured at the receiver as TestLimitsHoldAcrossTwoDispatchers does.
func TestCallbacksShareEndpointQPSWithTasks(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "svc", TargetURL: f.recv.srv.URL + "/hooks/svc", Concurrency: 20, QPS: 20})
	startDispatcher(t, c, relay.DispatcherConfig{Workers: 8})
	d := f.start(t, callback.DelivererConfig{Workers: 8, Relay: c})
	const n = 10
	f.callbacksAndTasks(t, c, n, "/svc")
	testwait.Until(t, 30*time.Second, "every callback delivered", func() bool { return d.Stats().Delivered == n })
	calls := f.recv.got()
	if len(calls) != 2*n {
		t.Fatalf("the service got %d calls, want %d", len(calls), 2*n)
	}
	arrivals := make([]time.Time, len(calls))
	for i, cl := range calls {
		arrivals[i] = cl.at
	}
	sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
	// At a shared 20 QPS (50ms apart) 20 calls start over at least 19 intervals (950ms); were the
	// limit not shared, each side's 10 would take 9 intervals (450ms). Arrivals are seen at the
	// receiver, after scheduling delays a loaded machine stretches, so the bar sits between the
	// two: 70% of 950ms still fails if tasks and callbacks were limited apart.
	if span := arrivals[len(arrivals)-1].Sub(arrivals[0]); span < 19*50*time.Millisecond*7/10 {
		t.Fatalf("%d tasks and %d callbacks at a shared 20 QPS arrived within %s", n, n, span)
	}
	if st, err := c.Stats(ctxT(t), "svc"); err != nil || st.SlotsReleased != n {
		t.Fatalf("stats = %+v, %v; want %d slots released", st, err, n)
	}
}

// A callback under no endpoint keeps the per-destination limits, and takes no endpoint's slot.
func TestCallbackUnderNoEndpointUsesDestinationLimits(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	peak := peakRecorder(f)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "svc", TargetURL: f.recv.srv.URL + "/hooks/svc", Concurrency: 1})
	var evs events
	a := f.start(t, callback.DelivererConfig{Workers: 8, Relay: c, DestinationConcurrency: 2, OnDelivery: evs.add})
	const n = 30
	ps := make([]queue.PublishParams, n)
	for i := range ps {
		// "/hooks/svcx" is beside the endpoint's "/hooks/svc", not under it.
		ps[i] = queue.PublishParams{Namespace: f.ns, Queue: "orders", Callback: f.hook("/svcx")}
	}
	if _, err := f.q.PublishMany(ctxT(t), ps); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "every callback delivered", func() bool { return a.Stats().Delivered == n })
	if p := peak.Load(); p > 2 {
		t.Fatalf("%d calls in flight, over the destination limit of 2", p)
	}
	if st, err := c.Stats(ctxT(t), "svc"); err != nil || st.SlotsReleased+st.SlotsExpired+st.Slots != 0 {
		t.Fatalf("svc stats = %+v, %v; want no slot taken", st, err)
	}
	for _, ev := range evs.atLeast(t, n) {
		if ev.Endpoint != "" {
			t.Fatalf("event %+v names an endpoint", ev)
		}
	}
}

// When the endpoint has no slot free before the lease runs short, the job is given back without
// using a try (outcome released, naming the endpoint), and delivered once a slot frees.
func TestCallbackReleasedWhenNoEndpointSlot(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	f := newCallbackFixture(t, env)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "svc", TargetURL: f.recv.srv.URL + "/hooks/svc", Concurrency: 1})
	held, err := c.AcquireSlot(ctxT(t), "svc", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var evs events
	d := f.start(t, callback.DelivererConfig{Workers: 2, Relay: c, OnDelivery: evs.add})
	// The lease leaves 300ms beyond the call's timeout to wait for a slot.
	id := f.publish(t, queue.PublishParams{Tries: 2, TTR: 800 * time.Millisecond,
		Callback: &queue.Callback{URL: f.recv.srv.URL + "/hooks/svc", Timeout: 500 * time.Millisecond}})
	testwait.Until(t, time.Minute, "a released try", func() bool { return d.Stats().Released > 0 })
	for _, ev := range evs.atLeast(t, 1) {
		if ev.Outcome != callback.OutcomeReleased || ev.Endpoint != "svc" || !strings.Contains(ev.Error, "no slot of endpoint svc") {
			t.Fatalf("event %+v; want released for want of a slot of svc", ev)
		}
	}
	if n := len(f.recv.got()); n != 0 {
		t.Fatalf("the service got %d calls while its only slot was held", n)
	}
	if err := held.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	job := f.waitState(t, id, queue.StateDone)
	if job.RemainingTries != 1 {
		t.Fatalf("remaining tries %d, want 1: released tries use none", job.RemainingTries)
	}
}

// callbacksAndTasks publishes n jobs whose callbacks go to the receiver's path and submits n tasks
// to endpoint svc, then waits until every task has completed.
func (f *cbFixture) callbacksAndTasks(t *testing.T, c *relay.Client, n int, path string) {
	t.Helper()
	ps := make([]queue.PublishParams, n)
	for i := range ps {
		ps[i] = queue.PublishParams{Namespace: f.ns, Queue: "orders", Callback: f.hook(path)}
	}
	if _, err := f.q.PublishMany(ctxT(t), ps); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = submit(t, c, relay.SubmitParams{Endpoint: "svc"}).ID
	}
	for _, id := range ids {
		if task := waitFinal(t, c, id); task.Status != relay.StatusCompleted {
			t.Fatalf("task %s = %s (%s)", id, task.Status, task.Error)
		}
	}
}
