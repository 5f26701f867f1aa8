package relay_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

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
		api := httptest.NewServer(relay.RequirePermit(c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		if _, err := other.CheckPermit(ctxT(t), first.Permit); !errors.Is(err, relay.ErrPermitInvalid) {
			t.Fatalf("permit checked with another key: %v, want ErrPermitInvalid", err)
		}
		if code := call(first.Permit); code != http.StatusOK || served != 1 {
			t.Fatalf("valid permit: %d (served %d), want 200", code, served)
		}
		if code := call(first.Permit); code != http.StatusForbidden {
			t.Fatalf("reused permit: %d, want 403", code)
		}
		if _, err := c.CheckPermit(ctxT(t), first.Permit); !errors.Is(err, relay.ErrPermitUsed) {
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
		if _, err := c.CheckPermit(ctxT(t), task.Permit); !errors.Is(err, relay.ErrNotPermitted) {
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
	if _, err := c.CheckPermit(ctxT(t), unused.Permit); !errors.Is(err, relay.ErrPermitExpired) && !errors.Is(err, relay.ErrNotPermitted) {
		t.Fatalf("expired permit = %v, want ErrPermitExpired or ErrNotPermitted", err)
	}
	if got := waitFinal(t, c, unused.ID); got.Status != relay.StatusFailed || got.Error != "permit expired unused" {
		t.Fatalf("unused permit's task = %s (%s)", got.Status, got.Error)
	}
	// A used permit that expires without Done counts as completed.
	used := permitted(t, c, "u")
	if _, err := c.CheckPermit(ctxT(t), used.Permit); err != nil {
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
	if _, err := rotated.CheckPermit(ctxT(t), task.Permit); err != nil {
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
	testwait.Until(t, 10*time.Second, "both workers busy", func() bool { return d.Stats().InFlight == 2 && tg.inFlight.Load() == 2 })
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
			if _, err := c.CheckPermit(ctxT(t), task.Permit); err != nil {
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
