package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// Once tasks have ended and their endpoint is deleted, maintenance removes every key of it; what
// is left (finished task hashes) expires.
func TestNothingOutlivesItsOwner(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{FinishedRetention: time.Minute})
		tg := newTarget(t, nil)
		setEndpoint(t, c, relay.Endpoint{Name: "life", TargetURL: tg.URL, QPS: 1000, Concurrency: 4, MaxQueuedPerSubject: 10})
		d := startDispatcher(t, c, relay.DispatcherConfig{MaintainInterval: -1})
		var ids []string
		for i := range 10 {
			ids = append(ids, submit(t, c, relay.SubmitParams{Endpoint: "life", Subject: []string{"a", "b"}[i%2]}).ID)
		}
		for _, id := range ids {
			waitFinal(t, c, id)
		}
		d.Stop()
		waiting := submit(t, c, relay.SubmitParams{Endpoint: "life", Subject: "a"}).ID
		if err := c.DeleteEndpoint(ctxT(t), "life"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.MaintainOnce(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if task := get(t, c, waiting); task.Status != relay.StatusCancelled {
			t.Fatalf("waiting task of the deleted endpoint = %s", task.Status)
		}
		// The deleted endpoint is maintained for a grace period (20 refresh intervals: 1 s here),
		// then forgotten.
		known := env.Prefix + ":relay:{relay}:known"
		testwait.UntilNil(t, time.Minute, func() error {
			if _, err := c.MaintainOnce(ctxT(t)); err != nil {
				return err
			}
			if n, err := env.Client.Exists(ctxT(t), known).Result(); err != nil || n != 0 {
				return fmt.Errorf("the deleted endpoint is still maintained (%d, %w)", n, err)
			}
			return nil
		})
		var keys []string
		for _, k := range scanKeys(t, env) {
			// The settings version counter is one small key per prefix, kept for good; the mark of
			// the registry's sweep is one per prefix too, and lapses after an hour; so is the set
			// of the due index's slots in use on a Cluster (at most 16,384 slots), kept for good.
			if strings.HasSuffix(k, ":relay:{relay}:version") || strings.HasSuffix(k, ":relay:{relay}:due:swept") ||
				k == relay.DueSlotsKey(c) {
				continue
			}
			keys = append(keys, k)
		}
		for _, k := range keys {
			ttl, err := env.Client.PTTL(ctxT(t), k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 0 || ttl > time.Minute {
				t.Errorf("key %s has ttl %s; want every key left to expire within the finished retention", k, ttl)
			}
		}
		// Besides the task hashes, only the confirmations of the endpoint's changes (expiring too).
		hashes := 0
		for _, k := range keys {
			if !strings.Contains(k, ":relay:{relay}:applied:") && !strings.Contains(k, ":call:") {
				hashes++
			}
		}
		if hashes != len(ids)+1 {
			t.Errorf("keys left: %v; want only the %d task hashes", keys, len(ids)+1)
		}
	})
}

func scanKeys(t *testing.T, env *redistest.Env) []string {
	t.Helper()
	ctx := ctxT(t)
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, env.Prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	switch c := env.Client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// Stop drains: a call under way finishes and its result is stored.
func TestStopDrainsCallsUnderWay(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		<-release
		_, _ = w.Write([]byte("drained"))
	})
	setEndpoint(t, c, relay.Endpoint{Name: "drain", TargetURL: tg.URL})
	d, err := relay.NewDispatcher(c, relay.DispatcherConfig{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	id := submit(t, c, relay.SubmitParams{Endpoint: "drain"}).ID
	testwait.Until(t, time.Minute, "the call", func() bool { return tg.inFlight.Load() == 1 })
	stopped := make(chan struct{})
	go func() {
		d.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a call was under way")
	case <-time.After(50 * time.Millisecond):
	}
	once.Do(func() { close(release) })
	<-stopped
	if task := get(t, c, id); task.Status != relay.StatusCompleted || string(task.Result) != "drained" {
		t.Fatalf("after Stop: %s %q", task.Status, task.Result)
	}
}

// A second Start of a running Dispatcher is refused; Stop is safe twice and from two goroutines at
// once; a stopped Dispatcher starts again and runs tasks.
func TestDispatcherStartStopRestart(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	tg := newTarget(t, nil)
	setEndpoint(t, c, relay.Endpoint{Name: "again", TargetURL: tg.URL})
	d, err := relay.NewDispatcher(c, relay.DispatcherConfig{AllowPrivate: true, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	for round := range 2 {
		if err := d.Start(ctxT(t)); err != nil {
			t.Fatalf("round %d: Start: %v", round, err)
		}
		if err := d.Start(ctxT(t)); !errors.Is(err, startstop.ErrAlreadyStarted) {
			t.Fatalf("round %d: second Start = %v, want startstop.ErrAlreadyStarted", round, err)
		}
		id := submit(t, c, relay.SubmitParams{Endpoint: "again"}).ID
		if task := waitFinal(t, c, id); task.Status != relay.StatusCompleted {
			t.Fatalf("round %d: task %s", round, task.Status)
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(d.Stop)
		}
		wg.Wait()
		d.Stop()
		if d.Running() {
			t.Fatalf("round %d: running after Stop", round)
		}
	}
}
