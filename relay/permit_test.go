package relay_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// permitted submits an online task and waits until it holds a permit.
func permitted(t *testing.T, c *relay.Client, endpoint string) relay.Task {
	t.Helper()
	id := submit(t, c, relay.SubmitParams{Endpoint: endpoint, Type: relay.Online}).ID
	task, err := c.Wait(ctxT(t), id, 10*time.Second)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if task.Status != relay.StatusPermitted || task.Permit == "" || task.PermitExpires.IsZero() {
		t.Fatalf("online task = %s permit %q, want permitted with a permit", task.Status, task.Permit)
	}
	return task
}

func TestOnlinePermits(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "o", TargetURL: "https://llm.example.com/", Concurrency: 1, PermitTTL: 5 * time.Second})
		startDispatcher(t, c, relay.DispatcherConfig{})

		// The endpoint itself, behind RequirePermit.
		var served int
		api := httptest.NewServer(relay.RequirePermit(c, "o", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, _ := relay.PermitFrom(r.Context())
			served++
			_, _ = io.WriteString(w, "hello "+p.TaskID)
		})))
		t.Cleanup(api.Close)
		call := func(permit string) int {
			req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, api.URL, nil)
			if permit != "" {
				req.Header.Set(relay.PermitHeader, permit)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			return resp.StatusCode
		}

		first := permitted(t, c, "o")
		second := submit(t, c, relay.SubmitParams{Endpoint: "o", Type: relay.Online}).ID
		if got := get(t, c, second); got.Status != relay.StatusPending || got.WaitNum != 0 || got.Permit != "" {
			t.Fatalf("second task = %s wait %d: the only slot is held by the first permit", got.Status, got.WaitNum)
		}
		if code := call(""); code != http.StatusUnauthorized {
			t.Fatalf("missing permit: %d, want 401", code)
		}
		forged := first.Permit[:len(first.Permit)-4] + "AAAA"
		if code := call(forged); code != http.StatusForbidden {
			t.Fatalf("forged permit: %d, want 403", code)
		}
		other := newClient(t, env, relay.Config{PermitKeys: [][]byte{[]byte(strings.Repeat("x", 32))}})
		if _, err := other.CheckPermit(ctxT(t), first.Permit, relay.PermitCall{Endpoint: "o"}); !errors.Is(err, relay.ErrPermitInvalid) {
			t.Fatalf("permit checked with another key: %v, want ErrPermitInvalid", err)
		}
		if code := call(first.Permit); code != http.StatusOK || served != 1 {
			t.Fatalf("valid permit: %d (served %d), want 200", code, served)
		}
		if code := call(first.Permit); code != http.StatusForbidden {
			t.Fatalf("reused permit: %d, want 403", code)
		}
		if _, err := c.CheckPermit(ctxT(t), first.Permit, relay.PermitCall{Endpoint: "o"}); !errors.Is(err, relay.ErrPermitUsed) {
			t.Fatalf("CheckPermit(reused) = %v, want ErrPermitUsed", err)
		}
		// Done frees the slot: the second task is permitted next.
		if err := c.Done(ctxT(t), first.ID, first.Permit, relay.DoneParams{HTTPStatus: 200}); err != nil {
			t.Fatalf("Done: %v", err)
		}
		if got := get(t, c, first.ID); got.Status != relay.StatusCompleted || got.HTTPStatus != 200 {
			t.Fatalf("first after Done = %s %d", got.Status, got.HTTPStatus)
		}
		task, err := c.Wait(ctxT(t), second, 10*time.Second)
		if err != nil || task.Status != relay.StatusPermitted {
			t.Fatalf("second after Done = %s, %v", task.Status, err)
		}
		// A permit of one task does not end another.
		if err := c.Done(ctxT(t), second, first.Permit, relay.DoneParams{}); !errors.Is(err, relay.ErrPermitInvalid) {
			t.Fatalf("Done with another task's permit = %v", err)
		}
		// Cancelling a permitted task makes its permit worthless.
		if _, err := c.Cancel(ctxT(t), second); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CheckPermit(ctxT(t), task.Permit, relay.PermitCall{Endpoint: "o"}); !errors.Is(err, relay.ErrNotPermitted) {
			t.Fatalf("permit of a cancelled task = %v, want ErrNotPermitted", err)
		}
	})
}

func TestPermitExpiryFreesTheSlot(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "e", TargetURL: "https://llm.example.com/", Concurrency: 1, PermitTTL: 100 * time.Millisecond})
	setEndpoint(t, c, relay.Endpoint{Name: "u", TargetURL: "https://llm2.example.com/", Concurrency: 1, PermitTTL: time.Second})
	startDispatcher(t, c, relay.DispatcherConfig{})
	unused := permitted(t, c, "e")
	next := permitted(t, c, "e") // starts once the first permit expired and maintenance freed its slot
	if next.StartedAt.Before(unused.PermitExpires) {
		t.Fatalf("second permit at %s, before the first expired at %s", next.StartedAt, unused.PermitExpires)
	}
	if _, err := c.CheckPermit(ctxT(t), unused.Permit, relay.PermitCall{Endpoint: "e"}); !errors.Is(err, relay.ErrPermitExpired) && !errors.Is(err, relay.ErrNotPermitted) {
		t.Fatalf("expired permit = %v, want ErrPermitExpired or ErrNotPermitted", err)
	}
	if got := waitFinal(t, c, unused.ID); got.Status != relay.StatusFailed || got.Error != "permit expired unused" {
		t.Fatalf("unused permit's task = %s (%s)", got.Status, got.Error)
	}
	// A used permit that expires without Done counts as completed.
	used := permitted(t, c, "u")
	if _, err := c.CheckPermit(ctxT(t), used.Permit, relay.PermitCall{Endpoint: "u"}); err != nil {
		t.Fatalf("CheckPermit: %v", err)
	}
	if got := waitFinal(t, c, used.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("used permit's task after expiry = %s, want completed", got.Status)
	}
}

func TestPermitKeyRotation(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	oldKey, newKey := testKey, []byte(strings.Repeat("n", 32))
	c := newClient(t, env, relay.Config{PermitKeys: [][]byte{oldKey}})
	setEndpoint(t, c, relay.Endpoint{Name: "rot", TargetURL: "https://llm.example.com/", Concurrency: 2})
	startDispatcher(t, c, relay.DispatcherConfig{})
	task := permitted(t, c, "rot")
	// A server that already signs with the new key still accepts the old key's permits.
	rotated := newClient(t, env, relay.Config{PermitKeys: [][]byte{newKey, oldKey}})
	if _, err := rotated.CheckPermit(ctxT(t), task.Permit, relay.PermitCall{Endpoint: "rot"}); err != nil {
		t.Fatalf("old-key permit on a rotated server: %v", err)
	}
	if p := get(t, rotated, task.ID).Permit; p == task.Permit {
		t.Fatal("the rotated server should sign with its first key")
	}
}

// Online tasks need no dispatcher worker: they are permitted while every worker is busy with
// another endpoint's calls.
func TestOnlineTasksDoNotWaitForWorkers(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) { <-release })
	setEndpoint(t, c, relay.Endpoint{Name: "busy", TargetURL: tg.URL, Concurrency: 10})
	setEndpoint(t, c, relay.Endpoint{Name: "live", TargetURL: "https://live.example.com/", Concurrency: 1})
	d := startDispatcher(t, c, relay.DispatcherConfig{Workers: 2})
	var busy []string
	for range 4 {
		busy = append(busy, submit(t, c, relay.SubmitParams{Endpoint: "busy"}).ID)
	}
	testwait.Until(t, time.Minute, "both workers busy", func() bool { return d.Stats().InFlight == 2 && tg.inFlight.Load() == 2 })
	permitted(t, c, "live")
	if got := get(t, c, busy[3]); got.Status != relay.StatusPending {
		t.Fatalf("fourth offline task = %s with no free worker", got.Status)
	}
	once.Do(func() { close(release) })
	for _, id := range busy {
		if task := waitFinal(t, c, id); task.Status != relay.StatusCompleted {
			t.Fatalf("task %s = %s", id, task.Status)
		}
	}
}

// Online tasks of a rate-limited endpoint get permits that are valid for their whole lifetime.
// With a backlog, take.lua hands out rate-limit tokens due within its lookahead, so a permit can
// start after a fractional delay; its end was stored as a fraction, which the client could not
// read, and such permits were born expired.
func TestRateLimitedPermitsAreValid(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "rl", TargetURL: "https://llm.example.com/", QPS: 20, Concurrency: 100, PermitTTL: time.Minute})
		var ids []string
		for range 20 {
			ids = append(ids, submit(t, c, relay.SubmitParams{Endpoint: "rl", Type: relay.Online}).ID)
		}
		startDispatcher(t, c, relay.DispatcherConfig{})
		for _, id := range ids {
			task, err := c.Wait(ctxT(t), id, 10*time.Second)
			if err != nil || task.Status != relay.StatusPermitted {
				t.Fatalf("task %s = %s, %v; want permitted", id, task.Status, err)
			}
			if left := time.Until(task.PermitExpires); left < 50*time.Second || left > time.Minute+time.Second {
				t.Fatalf("task %s: permit expires in %s, want about a minute", id, left)
			}
			if _, err := c.CheckPermit(ctxT(t), task.Permit, relay.PermitCall{Endpoint: "rl"}); err != nil {
				t.Fatalf("task %s: CheckPermit = %v", id, err)
			}
		}
	})
}

// Processes given no permit key share one kept in Redis: the first makes it, the rest read it, and
// it stays under the key name servers have always stored it at.
func TestSharedPermitKey(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	first, err := relay.SharedPermitKey(ctxT(t), env.Client, env.Prefix)
	if err != nil || !first.Created || len(first.Key) < 32 {
		t.Fatalf("first SharedPermitKey = %+v, %v; want a new key of at least 32 bytes", first, err)
	}
	again, err := relay.SharedPermitKey(ctxT(t), env.Client, env.Prefix)
	if err != nil || again.Created || string(again.Key) != string(first.Key) {
		t.Fatalf("second SharedPermitKey = %+v, %v; want the first key, not created", again, err)
	}
	name := env.Prefix + ":server:relay-permit-key"
	if stored, err := env.Client.Get(ctxT(t), name).Result(); err != nil || stored != string(first.Key) || first.RedisKey != name {
		t.Fatalf("stored at %s: %q, %v (RedisKey %q)", name, stored, err, first.RedisKey)
	}
	if err := env.Client.Set(ctxT(t), name, "short", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.SharedPermitKey(ctxT(t), env.Client, env.Prefix); err == nil || !strings.Contains(err.Error(), "shorter than 32 bytes") {
		t.Fatalf("short stored key: %v, want an error", err)
	}
}

// guarded is an endpoint's API behind RequirePermit for endpoint, counting the calls it serves.
type guarded struct {
	*httptest.Server
	served atomic.Int64
}

func guard(t *testing.T, c *relay.Client, endpoint string) *guarded {
	t.Helper()
	g := &guarded{}
	g.Server = httptest.NewServer(relay.RequirePermit(c, endpoint, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.served.Add(1)
	})))
	t.Cleanup(g.Close)
	return g
}

// call sends method target (a path, sent as written) with the permit; it returns the status and
// body.
func (g *guarded) call(t *testing.T, method, target, permit string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, g.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = target // the path exactly as written, dot segments and escapes included
	req.Header.Set(relay.PermitHeader, permit)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A permit is good at the endpoint it was issued for and nowhere else: presented at another
// endpoint's gateway (an idle endpoint's permit at a busy one's, to skip its queue), it is refused
// and stays unused; rewritten to name the other endpoint, its signature fails; used once, it is
// refused after.
func TestPermitIsBoundToItsEndpoint(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "busy", TargetURL: "https://busy.example.com/", Concurrency: 1})
		setEndpoint(t, c, relay.Endpoint{Name: "idle", TargetURL: "https://idle.example.com/", Concurrency: 1})
		startDispatcher(t, c, relay.DispatcherConfig{})
		busy, idle := guard(t, c, "busy"), guard(t, c, "idle")
		p := permitted(t, c, "idle").Permit

		code, body := busy.call(t, http.MethodPost, "/", p)
		if code != http.StatusForbidden || !strings.Contains(body, `for endpoint "idle", not "busy"`) || busy.served.Load() != 0 {
			t.Fatalf("idle's permit at busy: %d %q (served %d), want 403", code, body, busy.served.Load())
		}
		if _, err := c.CheckPermit(ctxT(t), p, relay.PermitCall{Endpoint: "busy"}); !errors.Is(err, relay.ErrPermitMismatch) {
			t.Fatalf("CheckPermit at another endpoint = %v, want ErrPermitMismatch", err)
		}
		// The permit names its task, and the task its endpoint: renaming it breaks the signature.
		renamed := strings.Replace(p, "p1.idle.", "p1.busy.", 1)
		if code, _ := busy.call(t, http.MethodPost, "/", renamed); code != http.StatusForbidden {
			t.Fatalf("permit renamed to busy: %d, want 403", code)
		}
		if _, err := c.CheckPermit(ctxT(t), renamed, relay.PermitCall{Endpoint: "busy"}); !errors.Is(err, relay.ErrPermitInvalid) {
			t.Fatalf("CheckPermit(renamed) = %v, want ErrPermitInvalid", err)
		}
		// A check that names no endpoint (or no valid one) is refused before the permit is read.
		for _, ep := range []string{"", "idle busy", strings.Repeat("e", 65)} {
			var fe *sluice.FieldError
			if _, err := c.CheckPermit(ctxT(t), p, relay.PermitCall{Endpoint: ep}); !errors.As(err, &fe) || fe.Field != "endpoint" {
				t.Fatalf("CheckPermit naming endpoint %q = %v, want a FieldError on endpoint", ep, err)
			}
		}
		// None of it used the permit up: at its own endpoint it admits one call.
		if code, _ := idle.call(t, http.MethodPost, "/", p); code != http.StatusOK || idle.served.Load() != 1 {
			t.Fatalf("idle's permit at idle: %d (served %d), want 200", code, idle.served.Load())
		}
		if code, body := idle.call(t, http.MethodPost, "/", p); code != http.StatusForbidden || idle.served.Load() != 1 {
			t.Fatalf("replayed permit: %d %q, want 403", code, body)
		}
		defer func() {
			if recover() == nil {
				t.Error("RequirePermit without a valid endpoint name did not panic")
			}
		}()
		relay.RequirePermit(c, "", http.NotFoundHandler())
	})
}

// An endpoint that binds its permits to methods and a path prefix admits a permitted call only
// with one of those methods and under that path, however the path is dressed up; a refused call
// leaves the permit unused.
func TestPermitIsBoundToMethodAndPath(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "gen", TargetURL: "https://gen.example.com/", Concurrency: 1,
		PermitMethods: []string{http.MethodPost, http.MethodPut}, PermitPathPrefix: "/v1/draw"})
	startDispatcher(t, c, relay.DispatcherConfig{})
	api := guard(t, c, "gen")
	p := permitted(t, c, "gen").Permit
	for _, bad := range []struct{ method, path string }{
		{http.MethodGet, "/v1/draw"},
		{http.MethodDelete, "/v1/draw/7"},
		{http.MethodPost, "/v1/drawings"},
		{http.MethodPost, "/v1/admin"},
		{http.MethodPost, "/v1/draw/../admin"},
		{http.MethodPost, "/v1/draw/%2e%2e/admin"},
		{http.MethodPost, "/v1/draw/%2E%2E%2fadmin"},
		{http.MethodPost, "/v1/draw/..%5cadmin"},
		{http.MethodPost, "/v1/%64raw"},
	} {
		if code, body := api.call(t, bad.method, bad.path, p); code != http.StatusForbidden || api.served.Load() != 0 {
			t.Fatalf("%s %s: %d %q (served %d), want 403", bad.method, bad.path, code, body, api.served.Load())
		}
	}
	var fe *sluice.FieldError
	if _, err := c.CheckPermit(ctxT(t), p, relay.PermitCall{Endpoint: "gen", Path: "/v1/draw"}); !errors.As(err, &fe) || fe.Field != "method" {
		t.Fatalf("CheckPermit without the method = %v, want a FieldError on method", err)
	}
	if _, err := c.CheckPermit(ctxT(t), p, relay.PermitCall{Endpoint: "gen", Method: http.MethodPost}); !errors.As(err, &fe) || fe.Field != "path" {
		t.Fatalf("CheckPermit without the path = %v, want a FieldError on path", err)
	}
	if code, body := api.call(t, http.MethodPost, "/v1/draw/sketch?size=4", p); code != http.StatusOK || api.served.Load() != 1 {
		t.Fatalf("POST under the prefix: %d %q (served %d), want 200", code, body, api.served.Load())
	}
	if code, _ := api.call(t, http.MethodPost, "/v1/draw/sketch", p); code != http.StatusForbidden || api.served.Load() != 1 {
		t.Fatalf("replayed permit: %d, want 403", code)
	}
}
