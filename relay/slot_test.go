package relay_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

// Bad input to AcquireSlot is a clear error and writes nothing: no key of the endpoint appears.
func TestAcquireSlotBadInput(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "svc", TargetURL: "http://127.0.0.1:9/", QPS: 10, Concurrency: 2})
	ctx := ctxT(t)
	before, err := env.Client.Keys(ctx, env.Prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, endpoint, holder string
		hold                   time.Duration
		want                   error
		field                  string
	}{
		{"unknown endpoint", "nope", "h", time.Second, relay.ErrNotFound, ""},
		{"bad endpoint name", "no:pe", "h", time.Second, relay.ErrNotFound, ""},
		{"zero hold", "svc", "h", 0, sluice.ErrInvalid, "hold"},
		{"negative hold", "svc", "h", -time.Second, sluice.ErrInvalid, "hold"},
		{"empty holder", "svc", "", time.Second, sluice.ErrInvalid, "holder"},
		{"overlong holder", "svc", strings.Repeat("h", 1025), time.Second, sluice.ErrInvalid, "holder"},
	} {
		s, err := c.AcquireSlot(ctx, tc.endpoint, tc.holder, tc.hold)
		if s != nil || !errors.Is(err, tc.want) {
			t.Fatalf("%s: AcquireSlot = %v, %v; want %v", tc.name, s, err, tc.want)
		}
		var fe *sluice.FieldError
		if tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field) {
			t.Fatalf("%s: error %v does not name the field %q", tc.name, err, tc.field)
		}
	}
	after, err := env.Client.Keys(ctx, env.Prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("keys before %v, after %v: bad input changed Redis", before, after)
	}
}

// A slot counts in the endpoint's running calls; the holder asking again gets its own slot back
// (no double count); a full endpoint makes AcquireSlot wait until a release wakes it.
func TestAcquireSlotWaitsForARelease(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "svc", TargetURL: "http://127.0.0.1:9/", Concurrency: 1})
		ctx := ctxT(t)
		a, err := c.AcquireSlot(ctx, "svc", "job-1/1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := c.AcquireSlot(ctx, "svc", "job-1/1", time.Minute); err != nil || again.Holder != "job-1/1" {
			t.Fatalf("the holder asking again: %v, %v", again, err)
		}
		st, err := c.Stats(ctx, "svc")
		if err != nil {
			t.Fatal(err)
		}
		if st.Running != 1 || st.Slots != 1 {
			t.Fatalf("running %d, slots %d; want 1 and 1", st.Running, st.Slots)
		}
		got := make(chan error, 1)
		var b *relay.Slot
		go func() {
			var err error
			b, err = c.AcquireSlot(ctx, "svc", "job-2/1", time.Minute)
			got <- err
		}()
		// A short wait cannot get the slot: it is held.
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if s, err := c.AcquireSlot(short, "svc", "job-3/1", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AcquireSlot on a full endpoint = %v, %v; want the context's deadline", s, err)
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Release(ctx); err != nil {
			t.Fatalf("a second Release: %v", err)
		}
		if err := <-got; err != nil {
			t.Fatalf("the waiting AcquireSlot: %v", err)
		}
		if err := b.Release(ctx); err != nil {
			t.Fatal(err)
		}
		st, err = c.Stats(ctx, "svc")
		if err != nil {
			t.Fatal(err)
		}
		if st.Running != 0 || st.Slots != 0 || st.SlotsReleased != 2 || st.SlotsExpired != 0 {
			t.Fatalf("stats after both releases = %+v", st)
		}
	})
}

// A killed holder's slot frees itself at its expiry: the next AcquireSlot gets it then.
func TestKilledHoldersSlotFreedAtExpiry(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		setEndpoint(t, c, relay.Endpoint{Name: "svc", TargetURL: "http://127.0.0.1:9/", Concurrency: 1})
		ctx := ctxT(t)
		if _, err := c.AcquireSlot(ctx, "svc", "killed", 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		// It waits for the killed holder's slot: nothing releases it.
		next, err := c.AcquireSlot(ctx, "svc", "next", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Stats(ctx, "svc")
		if err != nil {
			t.Fatal(err)
		}
		if st.Slots != 1 || st.SlotsExpired != 1 {
			t.Fatalf("stats = %+v; want one slot held and one expired", st)
		}
		if err := next.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
