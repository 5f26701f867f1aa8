package waitroom_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

func TestMaintainerRemovesSilentVisitorsAndRefreshesSettings(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := context.Background()
	keys := [][]byte{testKey()}
	abandoned := make(chan int, 10)
	c := newClient(t, env, waitroom.Config{PassKeys: keys, ConfigRefresh: 50 * time.Millisecond,
		Hooks: waitroom.Hooks{Abandoned: func(_ string, n int) { abandoned <- n }}})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, QueueTimeout: time.Second})
	m := waitroom.NewMaintainer(c, waitroom.MaintainerConfig{Interval: 50 * time.Millisecond})
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if err := m.Start(ctx); err == nil {
		t.Fatal("a second Start succeeded")
	}
	arrive(t, room, "in")
	arrive(t, room, "gone")
	select {
	case n := <-abandoned:
		if n != 1 {
			t.Fatalf("abandoned %d", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the silent visitor was not removed")
	}
	// Another instance changes the page language: this one's cache follows within a refresh.
	other := newClient(t, env, waitroom.Config{PassKeys: keys})
	if _, err := other.SetRoom(ctx, "r", waitroom.RoomConfig{MaxActive: 1, QueueTimeout: time.Second, Language: "zh"}); err != nil {
		t.Fatal(err)
	}
	testwait.UntilNil(t, 10*time.Second, func() error {
		cfg, err := room.Config(ctx)
		if err != nil || cfg.Language != "zh" {
			return fmt.Errorf("cached settings %+v, %w", cfg, err)
		}
		return nil
	})
	// A deleted room leaves the list at the next pass.
	if err := other.DeleteRoom(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if names, err := c.Rooms(ctx); err != nil || len(names) != 0 {
		t.Fatalf("rooms after delete: %v, %v", names, err)
	}
	if _, err := room.Arrive(ctx, "x"); err == nil {
		t.Fatal("Arrive in a deleted room succeeded")
	}
}

func TestNewClientValidation(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	for _, tc := range []struct {
		cfg  waitroom.Config
		want string
	}{
		{waitroom.Config{}, "PassKeys"},
		{waitroom.Config{PassKeys: [][]byte{[]byte("short")}}, "PassKeys[0]"},
		{waitroom.Config{PassKeys: [][]byte{testKey(), testKey(), testKey()}}, "PassKeys"},
		{waitroom.Config{PassKeys: [][]byte{testKey()}, Prefix: "a{b}"}, "Prefix"},
		{waitroom.Config{PassKeys: [][]byte{testKey()}, PollInterval: time.Millisecond}, "PollInterval"},
	} {
		if _, err := waitroom.NewClient(env.Client, tc.cfg); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("NewClient(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestRoomListOnCluster: the list of rooms is the one key outside a room's slot; no script takes
// it with a room's keys (it is written by single commands), so listing, maintaining, resetting and
// deleting rooms in different slots works on Redis Cluster as on one server.
func TestRoomListOnCluster(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := newClient(t, env, waitroom.Config{})
		names := []string{"alpha", "beta", "gamma"} // three different slots
		for _, name := range names {
			if _, err := c.SetRoom(ctx, name, waitroom.RoomConfig{MaxActive: 1, QueueTimeout: time.Second}); err != nil {
				t.Fatal(err)
			}
			r, err := c.Room(name)
			if err != nil {
				t.Fatal(err)
			}
			arrive(t, r, "in")
			arrive(t, r, "waiting")
		}
		if got, err := c.Rooms(ctx); err != nil || strings.Join(got, ",") != "alpha,beta,gamma" {
			t.Fatalf("Rooms = %v, %v", got, err)
		}
		if res, err := c.MaintainOnce(ctx); err != nil || res.Rooms != 3 {
			t.Fatalf("MaintainOnce = %+v, %v", res, err)
		}
		if err := c.ResetRoom(ctx, "beta"); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteRoom(ctx, "alpha"); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Rooms(ctx); err != nil || strings.Join(got, ",") != "beta,gamma" {
			t.Fatalf("Rooms after a delete = %v, %v", got, err)
		}
	})
}

// One maintenance pass with a batch over what Lua's unpack takes (about 8,000 values) frees every
// idle slot and removes every silent visitor it finds. It once failed with "too many results to
// unpack", on every pass, after freeing the slots: the silent visitors stayed at the head of the
// line and nobody behind them was admitted again.
func TestMaintainBatchesBeyondLuaUnpack(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := context.Background()
	const n = 8500
	c := newClient(t, env, waitroom.Config{Batch: 2 * n})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: n, SessionTimeout: time.Second, QueueTimeout: time.Second})
	// n visitors are admitted and n wait in line; then all of them go quiet.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < 2*n; i += 8 {
				if _, err := room.Arrive(ctx, fmt.Sprintf("v%d", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	quiet := time.Now()
	testwait.Until(t, 10*time.Second, "the session and queue timeouts to pass", func() bool {
		return time.Since(quiet) > 1100*time.Millisecond
	})
	res, err := c.MaintainOnce(ctx)
	if err != nil || res.Freed != n || res.Abandoned != n {
		t.Fatalf("MaintainOnce = %+v, %v; want %d freed and %d abandoned", res, err, n, n)
	}
	st, err := room.Stats(ctx)
	if err != nil || st.Active != 0 || st.Waiting != 0 {
		t.Fatalf("after the pass: %d active, %d waiting, %v; want none", st.Active, st.Waiting, err)
	}
}
