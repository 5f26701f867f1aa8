package relay_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// endpointCalls counts the commands that go through a client and name one endpoint's keys.
type endpointCalls struct {
	tag string // the endpoint's hash tag, {ep:<name>}
	n   atomic.Int64
}

func (*endpointCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (e *endpointCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		e.count(cmd)
		return next(ctx, cmd)
	}
}

func (e *endpointCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			e.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (e *endpointCalls) count(cmd redis.Cmder) {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.Contains(s, e.tag) {
			e.n.Add(1)
			return
		}
	}
}

// dispatcherWithCounter runs a Dispatcher on a Client of its own whose commands that name the
// endpoint's keys are counted, and waits for its first sweep of the endpoints.
// Its connections carry the client name clientName.
func dispatcherWithCounter(t *testing.T, env *redistest.Env, endpoint, clientName string, cfg relay.DispatcherConfig) *endpointCalls {
	t.Helper()
	rdb, err := redisx.NewClient(env.URL + "?client_name=" + clientName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	calls := &endpointCalls{tag: "{ep:" + endpoint + "}"}
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
	before := calls.n.Load()
	for range 5 {
		runTask(t, submitter, "busy")
	}
	if got := calls.n.Load() - before; got != 0 {
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
	before := calls.n.Load()

	ctx := ctxT(t)
	list, err := env.Client.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for line := range strings.SplitSeq(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") || !strings.Contains(line, " sub=1 ") {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
		if err := env.Client.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
			t.Fatal(err)
		}
		killed++
	}
	if killed == 0 {
		t.Fatalf("no subscription connection named %s:\n%s", name, list)
	}
	testwait.Until(t, time.Minute, "a look at the idle endpoint after the subscription came back", func() bool {
		return calls.n.Load() > before
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
