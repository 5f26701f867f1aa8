package relay_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// passUntil runs maintenance passes until done holds, checking each pass with check.
func passUntil(t *testing.T, c *relay.Client, what string, check func(relay.MaintainResult, error), done func() bool) {
	t.Helper()
	testwait.Until(t, 20*time.Second, what, func() bool {
		res, err := c.MaintainOnce(ctxT(t))
		check(res, err)
		return done()
	})
}

// A pass visits only endpoints with something due: among hundreds of idle endpoints, the one
// whose task waited past its queue deadline is the only one visited, and its task times out. An
// endpoint whose task was stored without an entry in the due index (by an older version) is found
// by the first pass's sweep of the registry.
func TestMaintainVisitsOnlyDueEndpoints(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		const idle = 300
		for i := range idle {
			setEndpoint(t, c, relay.Endpoint{Name: fmt.Sprintf("idle%03d", i), TargetURL: "https://idle.example.com/"})
		}
		setEndpoint(t, c, relay.Endpoint{Name: "old", TargetURL: "https://old.example.com/", QueueTimeout: time.Millisecond})
		old := submit(t, c, relay.SubmitParams{Endpoint: "old"}).ID
		// As an older version left it: no entry, and on a Cluster no slot announced.
		if err := env.Client.ZRem(ctxT(t), relay.DueKeyOf(c, "old"), "old").Err(); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Del(ctxT(t), relay.DueSlotsKey(c)).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := c.MaintainOnce(ctxT(t))
		if err != nil || res.Swept != idle+1 {
			t.Fatalf("first pass = %+v, %v; want the registry swept (%d endpoints)", res, err, idle+1)
		}
		checkSlotsAnnounced(t, env, relay.DueSlotsKey(c), idle+1)
		noErr := func(res relay.MaintainResult, err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		passUntil(t, c, "the old endpoint's task timed out", noErr, func() bool { return get(t, c, old).Status == relay.StatusTimeout })
		if res, err := c.MaintainOnce(ctxT(t)); err != nil || res.Endpoints != 0 || res.Swept != 0 {
			t.Fatalf("pass over idle endpoints = %+v, %v; want none visited", res, err)
		}

		setEndpoint(t, c, relay.Endpoint{Name: "late", TargetURL: "https://late.example.com/", QueueTimeout: time.Millisecond})
		id := submit(t, c, relay.SubmitParams{Endpoint: "late"}).ID
		timedOut := 0
		passUntil(t, c, "the late task timed out", func(res relay.MaintainResult, err error) {
			noErr(res, err)
			if res.Endpoints > 1 {
				t.Fatalf("a pass visited %d endpoints, want only the one with work due", res.Endpoints)
			}
			timedOut += res.TimedOut
		}, func() bool { return get(t, c, id).Status == relay.StatusTimeout })
		if timedOut != 1 {
			t.Fatalf("%d tasks timed out, want 1", timedOut)
		}
		if res, err := c.MaintainOnce(ctxT(t)); err != nil || res.Endpoints != 0 {
			t.Fatalf("pass after the work was done = %+v, %v; want none visited", res, err)
		}
	})
}

// An endpoint whose housekeeping fails is named in the error and its entry moves to its next try
// (a backoff of at least a second): the other endpoints due in the same pass are handled.
func TestMaintainIsolatesAFailingEndpoint(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		for _, name := range []string{"broken", "late"} {
			setEndpoint(t, c, relay.Endpoint{Name: name, TargetURL: "https://" + name + ".example.com/", QueueTimeout: time.Millisecond})
		}
		submit(t, c, relay.SubmitParams{Endpoint: "broken"})
		id := submit(t, c, relay.SubmitParams{Endpoint: "late"}).ID
		// The broken endpoint's running set is a string: its housekeeping script fails.
		if err := env.Client.Set(ctxT(t), env.Prefix+":relay:{ep:broken}:running", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var failedBefore time.Time // when the pass in which it last failed started
		testwait.Until(t, 20*time.Second, "the late task timed out beside the broken endpoint", func() bool {
			before := time.Now()
			res, err := c.MaintainOnce(ctxT(t))
			if res.Failed > 0 {
				if err == nil || !strings.Contains(err.Error(), "broken") {
					t.Fatalf("pass with a failure = %+v, %v; want the error to name the endpoint", res, err)
				}
				failedBefore = before
			}
			return !failedBefore.IsZero() && get(t, c, id).Status == relay.StatusTimeout
		})
		next, err := env.Client.ZScore(ctxT(t), relay.DueKeyOf(c, "broken"), "broken").Result()
		if err != nil {
			t.Fatal(err)
		}
		if at := time.UnixMilli(int64(next)); at.Before(failedBefore.Add(time.Second - time.Millisecond)) {
			t.Fatalf("the failing endpoint is due again %s after its pass started; want a backoff of a second", at.Sub(failedBefore))
		}
	})
}

// checkSlotsAnnounced checks, on a Cluster, that a completed sweep of things registered things
// announced their hash slots (at least one, at most one each) and marked the set complete, so
// passes read only those shards from now on.
func checkSlotsAnnounced(t *testing.T, env *redistest.Env, key string, things int) {
	t.Helper()
	if !env.Cluster {
		return
	}
	members, err := env.Client.SMembers(ctxT(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(members) < 2 || len(members) > things+1 || !slices.Contains(members, "complete") {
		t.Fatalf("slots in use after the sweep: %d members (complete: %v), want 1 to %d slots and the mark",
			len(members), slices.Contains(members, "complete"), things)
	}
}
