package relay_test

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

func TestEndpointCRUDAndDefaults(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	got := setEndpoint(t, c, relay.Endpoint{Name: "img", TargetURL: "https://img.example.com/gen"})
	if got.Concurrency != 1 || got.Tries != 3 || got.Timeout != 30*time.Second || got.MaxQueued != 10_000 ||
		got.QueueTimeout != 3*time.Hour || got.PermitTTL != time.Minute || got.QPS != 0 {
		t.Fatalf("defaults = %+v", got)
	}
	setEndpoint(t, c, relay.Endpoint{Name: "a", TargetURL: "https://a.example.com/", QPS: 2.5, Concurrency: 7})
	e, err := c.Endpoint(ctxT(t), "a")
	if err != nil || e.QPS != 2.5 || e.Concurrency != 7 {
		t.Fatalf("Endpoint(a) = %+v, %v", e, err)
	}
	list, err := c.Endpoints(ctxT(t))
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "img" {
		t.Fatalf("Endpoints = %+v, %v", list, err)
	}
	if err := c.DeleteEndpoint(ctxT(t), "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Endpoint(ctxT(t), "a"); !errors.Is(err, relay.ErrNotFound) {
		t.Fatalf("Endpoint after delete = %v", err)
	}
	if err := c.DeleteEndpoint(ctxT(t), "a"); !errors.Is(err, relay.ErrNotFound) {
		t.Fatalf("second delete = %v", err)
	}
}

// A change made through one Client applies on another (another server) before SetEndpoint
// returns: the next call there sees it. Both cache the settings for an hour, so nothing here is
// the refresh interval's doing.
func TestEndpointChangeAppliesOnOtherClientsAtOnce(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		a := newClient(t, env, relay.Config{RefreshInterval: time.Hour})
		b := newClient(t, env, relay.Config{RefreshInterval: time.Hour})
		setEndpoint(t, a, relay.Endpoint{Name: "e", TargetURL: "https://e.example.com/", MaxQueued: 1})
		if e, err := b.Endpoint(ctxT(t), "e"); err != nil || e.MaxQueued != 1 {
			t.Fatalf("b sees %+v, %v", e, err)
		}
		// New endpoints, each submitted to on b right after a created it.
		for i := range 20 {
			name := fmt.Sprintf("new-%d", i)
			setEndpoint(t, a, relay.Endpoint{Name: name, TargetURL: "https://" + name + ".example.com/"})
			if _, err := b.Submit(ctxT(t), relay.SubmitParams{Endpoint: name}); err != nil {
				t.Fatalf("submit %d on b right after a created the endpoint: %v", i, err)
			}
		}
		// A changed limit: max_queued 1 holds on b, then the raise applies at once.
		submit(t, b, relay.SubmitParams{Endpoint: "e"})
		if _, err := b.Submit(ctxT(t), relay.SubmitParams{Endpoint: "e"}); !errors.Is(err, relay.ErrQueueFull) {
			t.Fatalf("second task over max_queued 1: %v", err)
		}
		setEndpoint(t, a, relay.Endpoint{Name: "e", TargetURL: "https://e.example.com/", MaxQueued: 2})
		submit(t, b, relay.SubmitParams{Endpoint: "e"})
		if e, err := b.Endpoint(ctxT(t), "e"); err != nil || e.MaxQueued != 2 {
			t.Fatalf("b sees %+v, %v", e, err)
		}
		// A lowered one too.
		setEndpoint(t, a, relay.Endpoint{Name: "e", TargetURL: "https://e.example.com/", MaxQueued: 1})
		if _, err := b.Submit(ctxT(t), relay.SubmitParams{Endpoint: "e"}); !errors.Is(err, relay.ErrQueueFull) {
			t.Fatalf("a task over the lowered max_queued: %v", err)
		}
		if err := a.DeleteEndpoint(ctxT(t), "e"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Submit(ctxT(t), relay.SubmitParams{Endpoint: "e"}); !errors.Is(err, relay.ErrNotFound) {
			t.Fatalf("submit on b right after a deleted the endpoint: %v", err)
		}
	})
}

// A raised concurrency reaches another process's Dispatcher at once: it is asleep with every slot
// taken, and the change wakes it.
func TestEndpointChangeWakesOtherDispatchers(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	release := make(chan struct{})
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, _ int64) { <-release })
	defer close(release)
	a := newClient(t, env, relay.Config{RefreshInterval: time.Hour})
	b := newClient(t, env, relay.Config{RefreshInterval: time.Hour})
	setEndpoint(t, a, relay.Endpoint{Name: "slow", TargetURL: tg.URL, Concurrency: 1})
	startDispatcher(t, b, relay.DispatcherConfig{})
	submit(t, a, relay.SubmitParams{Endpoint: "slow"})
	submit(t, a, relay.SubmitParams{Endpoint: "slow"})
	testwait.Until(t, time.Minute, "the first call", func() bool { return tg.inFlight.Load() == 1 })
	setEndpoint(t, a, relay.Endpoint{Name: "slow", TargetURL: tg.URL, Concurrency: 2})
	testwait.Until(t, time.Minute, "the second call, started by b's dispatcher after the raise", func() bool {
		return tg.inFlight.Load() == 2
	})
}

func TestBadInputNamesTheField(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{MaxBodyBytes: 10})
	ok := relay.Endpoint{Name: "ok", TargetURL: "https://ok.example.com/"}
	setEndpoint(t, c, ok)
	endpoints := []struct {
		field string
		e     relay.Endpoint
	}{
		{"name", relay.Endpoint{Name: "", TargetURL: ok.TargetURL}},
		{"name", relay.Endpoint{Name: "a b", TargetURL: ok.TargetURL}},
		{"name", relay.Endpoint{Name: strings.Repeat("n", 65), TargetURL: ok.TargetURL}},
		{"target_url", relay.Endpoint{Name: "x"}},
		{"target_url", relay.Endpoint{Name: "x", TargetURL: "ftp://x/"}},
		{"target_url", relay.Endpoint{Name: "x", TargetURL: "/relative"}},
		{"target_url", relay.Endpoint{Name: "x", TargetURL: "https://u:p@x/"}},
		{"target_url", relay.Endpoint{Name: "x", TargetURL: "https://x/?q=1"}},
		{"qps", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, QPS: -1}},
		{"qps", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, QPS: math.NaN()}},
		{"qps", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, QPS: 1e-14}},
		{"qps", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, QPS: 2e6}},
		{"concurrency", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, Concurrency: -1}},
		{"timeout", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, Timeout: -time.Second}},
		{"queue_timeout", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, QueueTimeout: 4 * time.Hour}},
		{"max_queued", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, MaxQueued: -1}},
		{"max_queued_per_subject", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, MaxQueuedPerSubject: -1}},
		{"tries", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, Tries: 1000}},
		{"avg_duration", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, AvgDuration: -1}},
		{"permit_methods", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, PermitMethods: []string{"BREW"}}},
		{"permit_methods", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, PermitMethods: []string{"post"}}},
		{"permit_methods", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, PermitMethods: make([]string, 100)}},
		{"permit_path_prefix", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, PermitPathPrefix: "v1"}},
		{"permit_path_prefix", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, PermitPathPrefix: "/v1/../admin"}},
		{"permit_path_prefix", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, PermitPathPrefix: "/v1/"}},
		{"permit_path_prefix", relay.Endpoint{Name: "x", TargetURL: ok.TargetURL, PermitPathPrefix: "/" + strings.Repeat("p", 2000)}},
	}
	for _, tc := range endpoints {
		_, err := c.SetEndpoint(ctxT(t), tc.e)
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, sluice.ErrInvalid) {
			t.Errorf("SetEndpoint(%+v) = %v, want a FieldError on %s", tc.e, err, tc.field)
		}
	}
	tasks := []struct {
		field string
		p     relay.SubmitParams
	}{
		{"endpoint", relay.SubmitParams{}},
		{"http_method", relay.SubmitParams{Endpoint: "ok", Method: "BREW"}},
		{"task_type", relay.SubmitParams{Endpoint: "ok", Type: "later"}},
		{"priority", relay.SubmitParams{Endpoint: "ok", Priority: -1}},
		{"priority", relay.SubmitParams{Endpoint: "ok", Priority: 256}},
		{"subject", relay.SubmitParams{Endpoint: "ok", Subject: strings.Repeat("s", 257)}},
		{"body", relay.SubmitParams{Endpoint: "ok", Body: []byte("more than ten bytes")}},
		{"headers", relay.SubmitParams{Endpoint: "ok", Header: http.Header{"Host": {"evil"}}}},
		{"headers", relay.SubmitParams{Endpoint: "ok", Header: http.Header{"Bad Name": {"x"}}}},
		{"headers", relay.SubmitParams{Endpoint: "ok", Header: http.Header{"X-A": {"a\r\nInjected: 1"}}}},
		{"target_url", relay.SubmitParams{Endpoint: "ok", TargetURL: "https://other.example.com/"}},
	}
	for _, tc := range tasks {
		_, err := c.Submit(ctxT(t), tc.p)
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Submit(%+v) = %v, want a FieldError on %s", tc.p, err, tc.field)
		}
	}
	noKeys, err := relay.NewClient(env.Client, relay.Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = noKeys.Close() })
	var fe *sluice.FieldError
	if _, err := noKeys.Submit(ctxT(t), relay.SubmitParams{Endpoint: "ok", Type: relay.Online}); !errors.As(err, &fe) || fe.Field != "task_type" {
		t.Errorf("online task without permit keys = %v", err)
	}
	for _, id := range []string{"", "x", "ok.", "ok.short", "bad name.00000000000000000000000000", "ok.0000000000000000000000000!"} {
		if _, err := c.Get(ctxT(t), id); !errors.Is(err, relay.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", id, err)
		}
		if _, err := c.Cancel(ctxT(t), id); !errors.Is(err, relay.ErrNotFound) {
			t.Errorf("Cancel(%q) = %v, want ErrNotFound", id, err)
		}
	}
	if _, err := relay.NewClient(env.Client, relay.Config{Prefix: "bad prefix"}); err == nil || !strings.Contains(err.Error(), "Prefix") {
		t.Errorf("NewClient(bad prefix) = %v", err)
	}
	if _, err := relay.NewClient(env.Client, relay.Config{PermitKeys: [][]byte{[]byte("short")}}); err == nil || !strings.Contains(err.Error(), "PermitKeys") {
		t.Errorf("NewClient(short key) = %v", err)
	}
}

func TestQueueBounds(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "b", TargetURL: "https://b.example.com/", MaxQueued: 3, MaxQueuedPerSubject: 2})
		submit(t, c, relay.SubmitParams{Endpoint: "b", Subject: "alice"})
		alice2 := submit(t, c, relay.SubmitParams{Endpoint: "b", Subject: "alice"})
		if _, err := c.Submit(ctxT(t), relay.SubmitParams{Endpoint: "b", Subject: "alice"}); !errors.Is(err, relay.ErrQueueFull) {
			t.Fatalf("third task of alice = %v, want ErrQueueFull", err)
		}
		submit(t, c, relay.SubmitParams{Endpoint: "b", Subject: "bob"})
		if _, err := c.Submit(ctxT(t), relay.SubmitParams{Endpoint: "b", Subject: "carol"}); !errors.Is(err, relay.ErrQueueFull) {
			t.Fatalf("fourth task = %v, want ErrQueueFull (max_queued 3)", err)
		}
		// Cancelling one of alice's frees her share and a place in the queue.
		if _, err := c.Cancel(ctxT(t), alice2.ID); err != nil {
			t.Fatal(err)
		}
		submit(t, c, relay.SubmitParams{Endpoint: "b", Subject: "alice"})
	})
}

// Deleting an endpoint cancels its waiting tasks at the next maintenance pass, and the endpoint
// is then forgotten.
func TestDeletedEndpointCancelsWaitingTasks(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "gone", TargetURL: "https://g.example.com/"})
	id := submit(t, c, relay.SubmitParams{Endpoint: "gone"}).ID
	if err := c.DeleteEndpoint(ctxT(t), "gone"); err != nil {
		t.Fatal(err)
	}
	res, err := c.MaintainOnce(ctxT(t))
	if err != nil || res.Cancelled != 1 {
		t.Fatalf("MaintainOnce = %+v, %v", res, err)
	}
	if task := get(t, c, id); task.Status != relay.StatusCancelled || task.Error != "endpoint deleted" {
		t.Fatalf("task = %s (%s)", task.Status, task.Error)
	}
}

func TestETAFromSettingsBeforeData(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "known", TargetURL: "https://k.example.com/", Concurrency: 2, AvgDuration: time.Second})
	setEndpoint(t, c, relay.Endpoint{Name: "unknown", TargetURL: "https://u.example.com/", Concurrency: 2})
	setEndpoint(t, c, relay.Endpoint{Name: "limited", TargetURL: "https://l.example.com/", Concurrency: 100, QPS: 10})
	var known, unknown, limited []relay.SubmitResult
	for range 6 {
		known = append(known, submit(t, c, relay.SubmitParams{Endpoint: "known"}))
		unknown = append(unknown, submit(t, c, relay.SubmitParams{Endpoint: "unknown"}))
		limited = append(limited, submit(t, c, relay.SubmitParams{Endpoint: "limited"}))
	}
	// Two slots free: the first two start at once, then two per second (2 slots / 1s calls).
	for i, want := range []time.Duration{0, 0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second} {
		task := get(t, c, known[i].ID)
		if !task.WaitKnown || task.WaitTime != want || task.WaitNum != int64(i) {
			t.Errorf("known #%d: wait %s (known %v, ahead %d), want %s", i, task.WaitTime, task.WaitKnown, task.WaitNum, want)
		}
	}
	// No duration, no QPS, no data: only the tasks that free slots start at once are known.
	for i := range unknown {
		task := get(t, c, unknown[i].ID)
		if task.WaitKnown != (i < 2) {
			t.Errorf("unknown #%d: known = %v", i, task.WaitKnown)
		}
	}
	// QPS 10 and no token spent yet: one task now, then one every 100ms and the dispatchers'
	// margin (less than an interval over these six).
	var last time.Duration
	for i := range limited {
		task := get(t, c, limited[i].ID)
		if low := time.Duration(i) * 100 * time.Millisecond; !task.WaitKnown || task.WaitTime < low || task.WaitTime >= low+100*time.Millisecond || task.WaitTime < last {
			t.Errorf("limited #%d: wait %s (known %v), want from %s, below %s, and no less than #%d's %s", i, task.WaitTime, task.WaitKnown, low, low+100*time.Millisecond, i-1, last)
		}
		last = task.WaitTime
	}
	st, err := c.Stats(ctxT(t), "known")
	if err != nil || st.Queued != 6 || st.Running != 0 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	if eta, ok := st.ETA(3); !ok || eta != time.Second {
		t.Errorf("Stats.ETA(3) = %s %v, want 1s", eta, ok)
	}
}

// While the rate limit binds, a task waits for the next token, not from now: the token of the task
// that started last is spent. With the next token due in a minute (as a dispatcher leaves it after
// taking tasks from a long queue), a task with k tasks ahead waits that minute plus k intervals.
func TestETACountsFromTheNextToken(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "spent", TargetURL: "https://s.example.com/", Concurrency: 100, QPS: 1})
	now, err := env.Client.Time(ctxT(t)).Result()
	if err != nil {
		t.Fatal(err)
	}
	next := now.Add(time.Minute)
	if err := env.Client.Set(ctxT(t), env.Prefix+":relay:{ep:spent}:rate", next.UnixMilli(), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		ids = append(ids, submit(t, c, relay.SubmitParams{Endpoint: "spent"}).ID)
	}
	for k, id := range ids {
		task := get(t, c, id)
		// Read after the token time was set: at most the minute is left of it, and (read well
		// within the minute) more than 50 s. An interval is 1 s and the dispatchers' margin.
		low, high := 50*time.Second+time.Duration(k)*time.Second, time.Minute+time.Duration(k)*1100*time.Millisecond
		if !task.WaitKnown || task.WaitTime <= low || task.WaitTime > high {
			t.Errorf("task %d ahead: wait %s (known %v), want in (%s, %s]", k, task.WaitTime, task.WaitKnown, low, high)
		}
	}
	st, err := c.Stats(ctxT(t), "spent")
	if err != nil {
		t.Fatal(err)
	}
	if eta, ok := st.ETA(0); !ok || eta <= 50*time.Second || eta > time.Minute {
		t.Errorf("Stats.ETA(0) = %s %v, want the time until the next token", eta, ok)
	}
}

// A Client whose cached settings are older than a change (the change was not pushed to it, and
// its RefreshInterval has not come round or a refresh failed) neither cancels the tasks of an
// endpoint created since, nor leaves waiting forever a task it submits to an endpoint deleted
// since: its maintenance asks Redis before it treats an endpoint as deleted, and a deleted
// endpoint stays maintained for a grace period.
func TestMaintenanceWithStaleSettings(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	fresh := newClient(t, env, relay.Config{RefreshInterval: time.Second}) // a 20 s grace
	stale := newClient(t, env, relay.Config{RefreshInterval: time.Hour})
	relay.MissEndpointChanges(stale)
	setEndpoint(t, fresh, relay.Endpoint{Name: "gone", TargetURL: "https://api.example.com/"})
	if _, err := stale.MaintainOnce(ctxT(t)); err != nil { // reads the settings: "gone" only
		t.Fatal(err)
	}

	setEndpoint(t, fresh, relay.Endpoint{Name: "new", TargetURL: "https://new.example.com/"})
	created := submit(t, fresh, relay.SubmitParams{Endpoint: "new"}).ID
	if _, err := stale.MaintainOnce(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if task := get(t, fresh, created); task.Status != relay.StatusPending {
		t.Fatalf("a task of an endpoint the stale Client does not know yet: %s (%s), want pending", task.Status, task.Error)
	}

	if err := fresh.DeleteEndpoint(ctxT(t), "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.MaintainOnce(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	late := submit(t, stale, relay.SubmitParams{Endpoint: "gone"}).ID // its settings still list it
	if _, err := fresh.MaintainOnce(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if task := get(t, fresh, late); task.Status != relay.StatusCancelled || task.Error != "endpoint deleted" {
		t.Fatalf("a task submitted to a deleted endpoint through stale settings: %s (%s), want cancelled", task.Status, task.Error)
	}
}
