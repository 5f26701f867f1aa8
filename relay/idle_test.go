package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// dispatcherWithCounter runs a Dispatcher on a Client of its own whose commands that name the
// endpoint's keys are counted, and waits for its first sweep of the endpoints.
// Its connections carry the client name clientName.
func dispatcherWithCounter(t *testing.T, env *redistest.Env, endpoint, clientName string, cfg relay.DispatcherConfig) *redistest.Counter {
	t.Helper()
	rdb, err := redisx.NewClient(env.URL + "?client_name=" + clientName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	tag := "{ep:" + endpoint + "}"
	calls := &redistest.Counter{Match: func(cmd redis.Cmder) bool { return redistest.NamesKey(cmd, tag) }}
	rdb.AddHook(calls)
	c, err := relay.NewClient(rdb, relay.Config{Prefix: env.Prefix, PermitKeys: [][]byte{testKey}, RefreshInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	startDispatcher(t, c, cfg)
	testwait.Until(t, time.Minute, "the dispatcher's first sweep of the endpoints", func() bool {
		return env.Client.Exists(context.Background(), env.Prefix+":relay:{relay}:due:swept").Val() == 1
	})
	return calls
}

// An endpoint with nothing queued costs the Dispatcher no Redis call while another endpoint
// works: it is asked again on a wake-up (a task submitted, a slot freed) or after the long,
// jittered WakeupInterval, not at every PollInterval. 10,000 idle endpoints cost Redis next to
// nothing (docs/benchmarks.md).
func TestIdleEndpointCostsTheDispatcherNoRedisCall(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	tg := newTarget(t, nil)
	submitter := newClient(t, env, relay.Config{})
	for _, name := range []string{"idle", "busy"} {
		setEndpoint(t, submitter, relay.Endpoint{Name: name, TargetURL: tg.URL})
	}
	calls := dispatcherWithCounter(t, env, "idle", "idle-endpoint-"+env.Prefix, relay.DispatcherConfig{PollInterval: 10 * time.Millisecond, WakeupInterval: time.Hour})
	// The dispatcher's first look at the idle endpoint may still be under way; count from a
	// moment after the busy endpoint's first task is done.
	runTask(t, submitter, "busy")
	before := calls.Count()
	for range 5 {
		runTask(t, submitter, "busy")
	}
	if got := calls.Count() - before; got != 0 {
		t.Fatalf("while 5 tasks of another endpoint ran, the dispatcher made %d calls about the idle one, want 0", got)
	}

	// A task submitted to the idle endpoint wakes it at once (not an hour later).
	runTask(t, submitter, "idle")
}

// When the Dispatcher's subscription comes back after a lost connection, the wake-ups published
// meanwhile are lost: it asks Redis about every endpoint again at once, not a WakeupInterval later.
func TestDispatcherLooksAtEveryEndpointAfterALostSubscription(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	tg := newTarget(t, nil)
	submitter := newClient(t, env, relay.Config{})
	for _, name := range []string{"idle", "busy"} {
		setEndpoint(t, submitter, relay.Endpoint{Name: name, TargetURL: tg.URL})
	}
	name := "lost-subscription-" + env.Prefix
	calls := dispatcherWithCounter(t, env, "idle", name, relay.DispatcherConfig{WakeupInterval: time.Hour})
	runTask(t, submitter, "busy")
	before := calls.Count()

	if killed := redistest.KillSubscriptions(t, env, name); killed == 0 {
		t.Fatalf("no subscription connection named %s", name)
	}
	testwait.Until(t, time.Minute, "a look at the idle endpoint after the subscription came back", func() bool {
		return calls.Count() > before
	})
	runTask(t, submitter, "idle") // and wake-ups work again
}

// runTask submits a task to the endpoint and waits until it completed.
func runTask(t *testing.T, c *relay.Client, endpoint string) {
	t.Helper()
	if task := waitFinal(t, c, submit(t, c, relay.SubmitParams{Endpoint: endpoint}).ID); task.Status != relay.StatusCompleted {
		t.Fatalf("%s task: %s (%s)", endpoint, task.Status, task.Error)
	}
}
