package waitroom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

func TestAdmissionAndFIFO(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, waitroom.Config{})
		r := newRoom(t, c, waitroom.RoomConfig{MaxActive: 2})

		for i := range 2 {
			if st := arrive(t, r, visitorName(i)); st.State != waitroom.Admitted || st.Pass == "" {
				t.Fatalf("visitor %d: %+v, want admitted with a pass", i, st)
			}
		}
		for i := 2; i < 6; i++ {
			st := arrive(t, r, visitorName(i))
			if st.State != waitroom.Waiting || st.Position != i-1 || st.Length != i-1 {
				t.Fatalf("visitor %d: %+v, want waiting at %d of %d", i, st, i-1, i-1)
			}
			// No rate measured yet: the ETA goes by 2 places freed once a session_timeout (5m).
			if want := time.Duration(i-1) * 150 * time.Second; !st.ETAKnown || st.ETA != want {
				t.Fatalf("visitor %d: ETA %s (known %v) before any rate was measured, want %s from the settings", i, st.ETA, st.ETAKnown, want)
			}
		}
		// A refresh (the same visitor polling again) keeps the place; an admitted visitor polling
		// stays admitted.
		if st := arrive(t, r, visitorName(4)); st.Position != 3 {
			t.Fatalf("refresh moved visitor 4 to %d", st.Position)
		}
		if st := arrive(t, r, visitorName(0)); st.State != waitroom.Admitted {
			t.Fatalf("admitted visitor polled again: %+v", st)
		}
		// A slot frees: the head comes in, not a visitor further back who polls first.
		release(t, r, visitorName(0))
		if st := arrive(t, r, visitorName(3)); st.State != waitroom.Waiting || st.Position != 2 {
			t.Fatalf("visitor 3 jumped the line: %+v", st)
		}
		if st := arrive(t, r, visitorName(2)); st.State != waitroom.Admitted {
			t.Fatalf("head of the line not admitted to a free slot: %+v", st)
		}
		if st := arrive(t, r, visitorName(3)); st.Position != 1 || st.Length != 3 {
			t.Fatalf("visitor 3 after the head left: %+v, want 1 of 3", st)
		}
	})
}

func TestExactnessTwoInstances(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		const arrivals, maxActive = 10_000, 50
		// Two "servers": each its own Client on its own Redis connection pool.
		servers := []*waitroom.Room{}
		keys := [][]byte{testKey()}
		for range 2 {
			other := redistest.New(t)
			if env.Cluster {
				other = redistest.NewCluster(t)
			}
			other.Prefix = env.Prefix
			c := newClient(t, other, waitroom.Config{PassKeys: keys})
			r, err := c.Room("r")
			if err != nil {
				t.Fatal(err)
			}
			servers = append(servers, r)
		}
		setup := newClient(t, env, waitroom.Config{PassKeys: keys})
		if _, err := setup.SetRoom(context.Background(), "r", waitroom.RoomConfig{MaxActive: maxActive}); err != nil {
			t.Fatal(err)
		}

		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			admitted  int
			positions = make(map[int]bool)
			errs      []error
		)
		// Hundreds at once, each instance's 20 connections always busy; not all 10,000 at once,
		// which a loaded machine turns into waits for a connection past the pool's limit.
		inflight := make(chan struct{}, 256)
		for i := range arrivals {
			inflight <- struct{}{}
			wg.Go(func() {
				defer func() { <-inflight }()
				st, err := servers[i%2].Arrive(context.Background(), visitorName(i))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case st.State == waitroom.Admitted:
					admitted++
					if st.Active > maxActive {
						errs = append(errs, fmt.Errorf("script reported %d active", st.Active))
					}
				case st.State == waitroom.Waiting:
					if positions[st.Position] {
						errs = append(errs, fmt.Errorf("position %d given twice", st.Position))
					}
					positions[st.Position] = true
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if admitted != maxActive {
			t.Fatalf("admitted %d of %d arrivals, want exactly max_active %d", admitted, arrivals, maxActive)
		}
		// Nobody left the line during the test, so the positions handed out are exactly 1..waiting.
		for p := 1; p <= arrivals-maxActive; p++ {
			if !positions[p] {
				t.Fatalf("position %d never handed out (%d positions)", p, len(positions))
			}
		}
		stats, err := servers[0].Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if stats.Active != maxActive || stats.Waiting != arrivals-maxActive {
			t.Fatalf("stats %+v, want %d active and %d waiting", stats, maxActive, arrivals-maxActive)
		}
	})
}

func TestRuntimeCapacityChange(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		keys := [][]byte{testKey()}
		a := newClient(t, env, waitroom.Config{PassKeys: keys})
		b := newClient(t, env, waitroom.Config{PassKeys: keys})
		ra := newRoom(t, a, waitroom.RoomConfig{MaxActive: 1})
		rb, err := b.Room("r")
		if err != nil {
			t.Fatal(err)
		}
		arrive(t, ra, "v1")
		if st := arrive(t, rb, "v2"); st.State != waitroom.Waiting {
			t.Fatalf("v2 on instance b: %+v, want waiting", st)
		}
		// Raised on instance a: instance b admits at once, with no cache in the way.
		if _, err := a.SetRoom(ctx, "r", waitroom.RoomConfig{MaxActive: 3}); err != nil {
			t.Fatal(err)
		}
		if st := arrive(t, rb, "v2"); st.State != waitroom.Admitted || st.MaxActive != 3 {
			t.Fatalf("v2 after the raise: %+v, want admitted of 3", st)
		}
		// Lowered below the active count: nobody new comes in until enough have left.
		if _, err := a.SetRoom(ctx, "r", waitroom.RoomConfig{MaxActive: 1}); err != nil {
			t.Fatal(err)
		}
		if st := arrive(t, rb, "v3"); st.State != waitroom.Waiting {
			t.Fatalf("v3 after the cut: %+v, want waiting", st)
		}
		release(t, ra, "v1")
		if st := arrive(t, rb, "v3"); st.State != waitroom.Waiting {
			t.Fatalf("v3 with 1 active of 1: %+v, want waiting", st)
		}
		release(t, ra, "v2")
		if st := arrive(t, rb, "v3"); st.State != waitroom.Admitted {
			t.Fatalf("v3 once a slot is free: %+v, want admitted", st)
		}
		if cfg, err := rb.Config(ctx); err != nil || cfg.MaxActive != 1 {
			t.Fatalf("instance b's cached settings: %+v, %v; want max_active 1", cfg, err)
		}
	})
}

func TestHeartbeatExpiry(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := newClient(t, env, waitroom.Config{})
		// The queue timeout leaves room for a slow machine between two polls of "polling".
		r := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, QueueTimeout: 3 * time.Second, SessionTimeout: time.Second})
		arrive(t, r, "in")
		arrive(t, r, "silent")
		arrive(t, r, "polling")
		// "polling" keeps polling; "silent" does not, and leaves the line; "in" stops using its
		// slot, which is freed.
		testwait.UntilNil(t, 60*time.Second, func() error {
			st := arrive(t, r, "polling")
			if _, err := c.MaintainOnce(ctx); err != nil {
				return err
			}
			if st.State != waitroom.Admitted {
				return fmt.Errorf("polling visitor: %+v", st)
			}
			return nil
		})
		stats, err := r.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Abandoned != 1 || stats.Expired != 1 || stats.Waiting != 0 || stats.Active != 1 {
			t.Fatalf("stats %+v, want 1 abandoned, 1 expired, 1 active, none waiting", stats)
		}
	})
}

func TestRelease(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := newClient(t, env, waitroom.Config{})
		r := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
		arrive(t, r, "a")
		arrive(t, r, "b")
		arrive(t, r, "c")
		if ok, err := r.Release(ctx, "b"); err != nil || !ok {
			t.Fatalf("release of a waiting visitor: %v, %v", ok, err)
		}
		if ok, err := r.Release(ctx, "a"); err != nil || !ok {
			t.Fatalf("release of the admitted visitor: %v, %v", ok, err)
		}
		if ok, err := r.Release(ctx, "a"); err != nil || ok {
			t.Fatalf("second release: %v, %v; want false", ok, err)
		}
		if st := arrive(t, r, "c"); st.State != waitroom.Admitted {
			t.Fatalf("c after a left: %+v", st)
		}
		stats, err := r.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Released != 1 || stats.Admitted != 2 || stats.Active != 1 || stats.Waiting != 0 {
			t.Fatalf("stats %+v", stats)
		}
	})
}

func TestScheduledOpenShuffles(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := newClient(t, env, waitroom.Config{})
		openAt := time.Now().Add(5 * time.Second) // time for the early arrivals on a slow machine
		r := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, OpenAt: openAt})
		const early = 40
		for i := range early {
			st := arrive(t, r, visitorName(i))
			if st.State != waitroom.NotOpen || st.OpensIn <= 0 || st.Position != 0 {
				t.Fatalf("early visitor %d: %+v, want not_open with a countdown", i, st)
			}
		}
		testwait.UntilNil(t, time.Minute, func() error {
			if time.Now().Before(openAt) {
				return errNotYet
			}
			return nil
		})
		// A latecomer queues behind every early visitor.
		late := arrive(t, r, "late")
		if late.State != waitroom.Waiting || late.Position != early+1 && late.Position != early {
			t.Fatalf("late visitor: %+v, want behind the %d early ones", late, early)
		}
		// The early visitors' order is a draw, not their arrival order.
		order := make([]int, early)
		for i := range early {
			st := arrive(t, r, visitorName(i))
			order[i] = st.Position
			if st.State == waitroom.Admitted {
				order[i] = 0
			}
		}
		inOrder := true
		for i := 1; i < early; i++ {
			if order[i] < order[i-1] {
				inOrder = false
			}
		}
		if inOrder {
			t.Fatalf("positions after the open follow the arrival order: %v", order)
		}
		if st := arrive(t, r, "late"); st.Position != early {
			t.Fatalf("late visitor after the draw: %+v, want position %d", st, early)
		}
		_ = ctx
	})
}

func TestRoomConfigValidation(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	for _, tc := range []struct {
		cfg   waitroom.RoomConfig
		field string
	}{
		{waitroom.RoomConfig{}, "max_active"},
		{waitroom.RoomConfig{MaxActive: 1, NewUsersPerMinute: -1}, "new_users_per_minute"},
		{waitroom.RoomConfig{MaxActive: 1, SessionTimeout: time.Millisecond}, "session_timeout"},
		{waitroom.RoomConfig{MaxActive: 1, QueueTimeout: 48 * time.Hour}, "queue_timeout"},
		{waitroom.RoomConfig{MaxActive: 1, PassTTL: time.Hour}, "pass_ttl"},
		{waitroom.RoomConfig{MaxActive: 1, Upstream: "ftp://x"}, "upstream"},
		{waitroom.RoomConfig{MaxActive: 1, Language: "it"}, "language"},
		{waitroom.RoomConfig{MaxActive: 1, SiteName: strings.Repeat("é", 101)}, "site_name"},
		{waitroom.RoomConfig{MaxActive: 1, SiteName: "Shop\nNews"}, "site_name"},
		{waitroom.RoomConfig{MaxActive: 1, SiteName: "\xff"}, "site_name"},
		{waitroom.RoomConfig{MaxActive: 1, LogoURL: "http://cdn.example/logo.png"}, "logo_url"},
		{waitroom.RoomConfig{MaxActive: 1, LogoURL: "javascript:alert(1)"}, "logo_url"},
		{waitroom.RoomConfig{MaxActive: 1, LogoURL: "data:image/png;base64,AAAA"}, "logo_url"},
		{waitroom.RoomConfig{MaxActive: 1, LogoURL: "//evil.example/logo.png"}, "logo_url"},
		{waitroom.RoomConfig{MaxActive: 1, LogoURL: "logo.png"}, "logo_url"},
		{waitroom.RoomConfig{MaxActive: 1, LogoURL: "/a b.png"}, "logo_url"},
		{waitroom.RoomConfig{MaxActive: 1, LogoURL: "https://user@cdn.example/logo.png"}, "logo_url"},
		{waitroom.RoomConfig{MaxActive: 1, LogoURL: "/" + strings.Repeat("a", 2048)}, "logo_url"},
		{waitroom.RoomConfig{MaxActive: 1, Template: "{{.Position"}, "template"},
	} {
		_, err := c.SetRoom(context.Background(), "r", tc.cfg)
		var ce *sluice.FieldError
		if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, sluice.ErrInvalid) {
			t.Errorf("SetRoom(%+v) = %v, want a FieldError naming %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := c.Room("bad name"); err == nil {
		t.Error("Room accepted a name with a space")
	}
	if _, err := c.GetRoom(context.Background(), "nothing"); !errors.Is(err, waitroom.ErrRoomNotFound) {
		t.Errorf("GetRoom of a missing room: %v", err)
	}
}

func TestInflowLimitAndETA(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		var mu sync.Mutex
		var hooked int
		c := newClient(t, env, waitroom.Config{Hooks: waitroom.Hooks{Admitted: func(room string, waited time.Duration) {
			mu.Lock()
			hooked++
			mu.Unlock()
		}}})
		// 60 a minute: one a second, bursts of 5.
		r := newRoom(t, c, waitroom.RoomConfig{MaxActive: 100, NewUsersPerMinute: 60})
		admitted := 0
		for i := range 10 {
			if arrive(t, r, visitorName(i)).State == waitroom.Admitted {
				admitted++
			}
		}
		if admitted != 5 {
			t.Fatalf("%d of 10 admitted at once with a burst of 5", admitted)
		}
		// Now the line moves about one a second, head first. Until visitors have come in from the
		// line (filling the free slots at once says nothing of its pace) the ETA goes by the
		// inflow limit: place 5 at 60 a minute is 5 seconds away.
		if st := arrive(t, r, visitorName(9)); st.State != waitroom.Waiting || !st.ETAKnown || st.ETA != 5*time.Second {
			t.Fatalf("visitor 9 before the line moved: %+v", st)
		}
		for _, head := range []int{5, 6} {
			testwait.UntilNil(t, time.Minute, func() error {
				if st := arrive(t, r, visitorName(head)); st.State != waitroom.Admitted {
					return fmt.Errorf("head %d: %+v", head, st)
				}
				return nil
			})
		}
		// Two admissions from the line over a second or more: a rate, so an ETA of position / rate.
		testwait.UntilNil(t, time.Minute, func() error {
			st := arrive(t, r, visitorName(9))
			if st.State == waitroom.Admitted {
				t.Fatalf("visitor 9 came in ahead of the 2 before it: %+v", st)
			}
			if !st.ETAKnown || st.ETA <= 0 || st.Position != 3 {
				return fmt.Errorf("visitor 9: %+v", st)
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		if hooked == 0 {
			t.Fatal("the Admitted hook was not called for visitors who waited")
		}
	})
}

func TestTouchKeepsOrLosesTheSlot(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := newClient(t, env, waitroom.Config{TouchInterval: time.Millisecond})
		r := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, SessionTimeout: time.Second})
		arrive(t, r, "a")
		// touch asks Redis once the touch interval since the last one has passed (an empty pass:
		// deduplicated, the old pass stands).
		touch := func(wantHeld bool) {
			t.Helper()
			testwait.UntilNil(t, time.Minute, func() error {
				held, pass, exp, err := r.Touch(ctx, "a")
				switch {
				case err != nil:
					return err
				case held && pass == "":
					return errNotYet
				case held != wantHeld:
					return fmt.Errorf("held %v, want %v", held, wantHeld)
				case held && time.Until(exp) <= 0:
					return fmt.Errorf("renewed pass expires at %v", exp)
				}
				return nil
			})
		}
		touch(true)
		// Idle past session_timeout: b gets the slot, and a's next touch says a lost it.
		testwait.UntilNil(t, time.Minute, func() error {
			if st := arrive(t, r, "b"); st.State != waitroom.Admitted {
				return fmt.Errorf("b: %+v", st)
			}
			return nil
		})
		touch(false)
		// Once b leaves and nobody waits, a's touch takes a slot again.
		release(t, r, "b")
		touch(true)
	})
}
