package relay_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

// The scripts run as a Redis function library where Redis has FUNCTION, and as EVALSHA scripts
// where it does not; a whole task runs either way.
func TestScriptsRunAsFunctionsOrEvalsha(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"functions", "evalsha"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			env := redistest.New(t)
			rdb := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(env.URL, "redis://")})
			t.Cleanup(func() { _ = rdb.Close() })
			hook := &noFunctions{refuse: mode == "evalsha"}
			rdb.AddHook(hook)
			c, err := relay.NewClient(rdb, relay.Config{Prefix: env.Prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			tg := newTarget(t, nil)
			setEndpoint(t, c, relay.Endpoint{Name: "m", TargetURL: tg.URL})
			startDispatcher(t, c, relay.DispatcherConfig{})
			id := submit(t, c, relay.SubmitParams{Endpoint: "m"}).ID
			if task := waitFinal(t, c, id); task.Status != relay.StatusCompleted {
				t.Fatalf("task = %s (%s)", task.Status, task.Error)
			}
			hook.mu.Lock()
			defer hook.mu.Unlock()
			if mode == "functions" && (hook.fcalls == 0 || hook.evals > 0) {
				t.Fatalf("fcalls %d, evals %d; want every endpoint script as a function", hook.fcalls, hook.evals)
			}
			if mode == "evalsha" && (hook.fcalls == 0 || hook.evals == 0) {
				t.Fatalf("function calls refused %d, evals %d; want both", hook.fcalls, hook.evals)
			}
		})
	}
}

// noFunctions counts function calls and script calls; with refuse set it makes a client look
// like a store without FUNCTION (Redis before 7).
type noFunctions struct {
	refuse        bool
	mu            sync.Mutex
	fcalls, evals int
}

func (h *noFunctions) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *noFunctions) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.check(cmd) {
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (h *noFunctions) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if h.check(cmd) {
				return cmd.Err()
			}
		}
		return next(ctx, cmds)
	}
}

type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func (h *noFunctions) check(cmd redis.Cmder) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch cmd.Name() {
	case "function", "fcall", "fcall_ro":
		h.fcalls++
	case "evalsha", "eval":
		h.evals++
	}
	if h.refuse && (cmd.Name() == "function" || cmd.Name() == "fcall" || cmd.Name() == "fcall_ro") {
		cmd.SetErr(replyError("ERR unknown command `" + cmd.Name() + "`, with args beginning with: "))
		return true
	}
	return false
}

// A Redis that lost the library (FUNCTION FLUSH, a restart without persistence, a failover) gets
// it again at the next call, which then runs.
func TestLibraryIsReloadedWhenLost(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := relay.NewClient(rdb, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	setEndpoint(t, c, relay.Endpoint{Name: "r", TargetURL: "https://r.example.com/"})
	submit(t, c, relay.SubmitParams{Endpoint: "r"})
	if err := rdb.FunctionFlush(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
	r := submit(t, c, relay.SubmitParams{Endpoint: "r"})
	if r.WaitNum != 1 {
		t.Fatalf("second task wait_num = %d, want 1", r.WaitNum)
	}
	libs, err := rdb.FunctionList(ctxT(t), redis.FunctionListQuery{LibraryNamePattern: "sluice_relay_*"}).Result()
	if err != nil || len(libs) != 1 {
		t.Fatalf("libraries after the reload: %d, %v", len(libs), err)
	}
}

// On a Redis over maxmemory (noeviction) new tasks are refused, but reads and the calls that move
// tasks on (cancel, maintenance, deleting the endpoint) still run, so a full Redis can drain.
func TestFullRedisRefusesSubmitsButDrains(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, "maxmemory-policy noeviction")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := relay.NewClient(rdb, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	setEndpoint(t, c, relay.Endpoint{Name: "full", TargetURL: "https://f.example.com/"})
	id := submit(t, c, relay.SubmitParams{Endpoint: "full"}).ID
	if err := rdb.ConfigSet(ctxT(t), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctxT(t), relay.SubmitParams{Endpoint: "full"}); err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("Submit on a full Redis = %v, want an OOM refusal", err)
	}
	if _, err := c.Stats(ctxT(t), "full"); err != nil {
		t.Errorf("Stats on a full Redis: %v", err)
	}
	if task, err := c.Get(ctxT(t), id); err != nil || task.Status != relay.StatusPending {
		t.Errorf("Get on a full Redis: %s, %v", task.Status, err)
	}
	if res, err := c.Cancel(ctxT(t), id); err != nil || !res.Cancelled {
		t.Errorf("Cancel on a full Redis: %+v, %v", res, err)
	}
	if _, err := c.MaintainOnce(ctxT(t)); err != nil {
		t.Errorf("MaintainOnce on a full Redis: %v", err)
	}
	if err := c.DeleteEndpoint(ctxT(t), "full"); err != nil {
		t.Errorf("DeleteEndpoint on a full Redis: %v", err)
	}
	if err := c.DeleteEndpoint(ctxT(t), "full"); !errors.Is(err, relay.ErrNotFound) {
		t.Errorf("DeleteEndpoint again = %v, want ErrNotFound (the first one deleted it)", err)
	}
}
