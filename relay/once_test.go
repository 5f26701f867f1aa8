package relay_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

// newClientBehindProxy is newClient on a connection through a proxy that can lose replies
// (go-redis then sends the call again), and the proxy.
func newClientBehindProxy(t *testing.T, env *redistest.Env, cfg relay.Config) (*relay.Client, *flakyproxy.Proxy) {
	t.Helper()
	rdb, proxy := flakyproxy.NewClient(t, env)
	cfg.Prefix = env.Prefix
	if cfg.PermitKeys == nil {
		cfg.PermitKeys = [][]byte{testKey}
	}
	c, err := relay.NewClient(rdb, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, proxy
}

// A permit check and a done whose replies are lost reach Redis twice and act once: the permit's
// rightful caller is admitted (not told the permit was used, by its own first call), a second
// presentation is refused as used, and the done frees the endpoint's one slot once.
func TestPermitCallsActOnceWhenRepeated(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	flaky, proxy := newClientBehindProxy(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "o", TargetURL: "https://llm.example.com/", Concurrency: 1})
	startDispatcher(t, c, relay.DispatcherConfig{})
	task := permitted(t, c, "o")

	rule := proxy.DropReplies(flakyproxy.FunctionCall("permit"), 1)
	if _, err := flaky.CheckPermit(ctxT(t), task.Permit, relay.PermitCall{Endpoint: "o"}); err != nil || rule.Dropped() != 1 {
		t.Fatalf("permit check, reply lost: %v (%d dropped); want admitted", err, rule.Dropped())
	}
	if _, err := flaky.CheckPermit(ctxT(t), task.Permit, relay.PermitCall{Endpoint: "o"}); !errors.Is(err, relay.ErrPermitUsed) {
		t.Fatalf("the permit presented again: %v, want ErrPermitUsed", err)
	}

	rule = proxy.DropReplies(flakyproxy.FunctionCall("permit"), 1)
	if err := flaky.Done(ctxT(t), task.ID, task.Permit, relay.DoneParams{HTTPStatus: http.StatusOK}); err != nil || rule.Dropped() != 1 {
		t.Fatalf("done, reply lost: %v (%d dropped); want success", err, rule.Dropped())
	}
	if got := get(t, c, task.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("task after done = %s, want completed", got.Status)
	}
	st, err := c.Stats(ctxT(t), "o")
	if err != nil || st.Running != 0 {
		t.Fatalf("after done: running %d, %v; want the slot free", st.Running, err)
	}
	next := permitted(t, c, "o") // the freed slot goes to the next task
	if next.ID == task.ID {
		t.Fatal("the same task permitted twice")
	}
}

// A dispatcher's take whose reply is lost reaches Redis twice and acts once: the dispatcher gets
// the task the first take leased and calls the target once, on the first try, and the slot is
// free after.
func TestTakeActsOnceWhenRepeated(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	flaky, proxy := newClientBehindProxy(t, env, relay.Config{})
	tg := newTarget(t, func(w http.ResponseWriter, _ *http.Request, _ int64) { w.WriteHeader(http.StatusOK) })
	setEndpoint(t, c, relay.Endpoint{Name: "t", TargetURL: tg.URL, Concurrency: 1})
	rule := proxy.DropReplies(flakyproxy.FunctionCall("take"), 1)
	id := submit(t, c, relay.SubmitParams{Endpoint: "t", Body: []byte("x")}).ID
	startDispatcher(t, flaky, relay.DispatcherConfig{})

	task := waitFinal(t, c, id)
	if rule.Dropped() != 1 {
		t.Fatalf("%d take replies dropped, want 1", rule.Dropped())
	}
	arrivals, _ := tg.snapshot()
	if task.Status != relay.StatusCompleted || task.Tries != 1 || len(arrivals) != 1 {
		t.Fatalf("task = %s after %d tries, %d calls; want completed on the first try, one call",
			task.Status, task.Tries, len(arrivals))
	}
	if st, err := c.Stats(ctxT(t), "t"); err != nil || st.Running != 0 {
		t.Fatalf("after the task: running %d, %v; want the slot free", st.Running, err)
	}
}

// A dispatcher's finish whose reply is lost reaches Redis twice and acts once: the task is
// completed on its one call, its slot freed once, and the dispatcher hears that its result was
// stored (not that its lease had ended, which would count the result as discarded).
func TestFinishActsOnceWhenRepeated(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	flaky, proxy := newClientBehindProxy(t, env, relay.Config{})
	tg := newTarget(t, func(w http.ResponseWriter, _ *http.Request, _ int64) { w.WriteHeader(http.StatusOK) })
	setEndpoint(t, c, relay.Endpoint{Name: "f", TargetURL: tg.URL, Concurrency: 1})
	rule := proxy.DropReplies(flakyproxy.FunctionCall("finish"), 1)
	id := submit(t, c, relay.SubmitParams{Endpoint: "f", Body: []byte("x")}).ID
	d := startDispatcher(t, flaky, relay.DispatcherConfig{})

	task := waitFinal(t, c, id)
	if rule.Dropped() != 1 {
		t.Fatalf("%d finish replies dropped, want 1", rule.Dropped())
	}
	arrivals, _ := tg.snapshot()
	if task.Status != relay.StatusCompleted || task.Tries != 1 || len(arrivals) != 1 {
		t.Fatalf("task = %s after %d tries, %d calls; want completed on the first try, one call",
			task.Status, task.Tries, len(arrivals))
	}
	d.Stop() // waits for the dispatcher's finish to have heard its answer
	if st := d.Stats(); st.Succeeded != 1 || st.Discarded != 0 {
		t.Fatalf("dispatcher stats %+v; want one success and no result discarded", st)
	}
	if st, err := c.Stats(ctxT(t), "f"); err != nil || st.Running != 0 {
		t.Fatalf("after the task: running %d, %v; want the slot free", st.Running, err)
	}
}

// A submit, a cancel, a slot's take and its release whose replies are lost reach Redis twice
// and act once: one task queued (and the submitter not told it is a duplicate of itself), the
// canceller told it cancelled it, one slot held and then freed once.
func TestSubmitCancelAndSlotCallsActOnceWhenRepeated(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	flaky, proxy := newClientBehindProxy(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "s", TargetURL: "https://api.example.com/", Concurrency: 2})
	ctx := ctxT(t)

	rule := proxy.DropReplies(flakyproxy.FunctionCall("submit"), 1)
	res, err := flaky.Submit(ctx, relay.SubmitParams{Endpoint: "s", Body: []byte("x")})
	if err != nil || res.Duplicate || rule.Dropped() != 1 {
		t.Fatalf("submit, reply lost: %+v, %v (%d dropped); want a new task", res, err, rule.Dropped())
	}
	if st, err := c.Stats(ctx, "s"); err != nil || st.Queued != 1 {
		t.Fatalf("after the submit: queued %d, %v; want 1", st.Queued, err)
	}

	rule = proxy.DropReplies(flakyproxy.FunctionCall("cancel"), 1)
	out, err := flaky.Cancel(ctx, res.ID)
	if err != nil || !out.Cancelled || out.Status != relay.StatusCancelled || rule.Dropped() != 1 {
		t.Fatalf("cancel, reply lost: %+v, %v (%d dropped); want cancelled by this call", out, err, rule.Dropped())
	}

	rule = proxy.DropReplies(flakyproxy.FunctionCall("slot_take"), 1)
	slot, err := flaky.AcquireSlot(ctx, "s", "job-1", time.Minute)
	if err != nil || rule.Dropped() != 1 {
		t.Fatalf("slot take, reply lost: %v (%d dropped)", err, rule.Dropped())
	}
	rule = proxy.DropReplies(flakyproxy.FunctionCall("slot_release"), 1)
	if err := slot.Release(ctx); err != nil || rule.Dropped() != 1 {
		t.Fatalf("slot release, reply lost: %v (%d dropped); want released", err, rule.Dropped())
	}
	st, err := c.Stats(ctx, "s")
	if err != nil || st.Running != 0 || st.Slots != 0 || st.SlotsReleased != 1 {
		t.Fatalf("after the slot: running %d, slots %d, released %d, %v; want freed once", st.Running, st.Slots, st.SlotsReleased, err)
	}
}
