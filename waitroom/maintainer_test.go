package waitroom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
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
	if err := m.Start(ctx); !errors.Is(err, startstop.ErrAlreadyStarted) {
		t.Fatalf("a second Start: %v, want ErrAlreadyStarted", err)
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
	testwait.UntilNil(t, time.Minute, func() error {
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
		{waitroom.Config{PassKeys: [][]byte{testKey()}, LeftWindow: time.Millisecond}, "LeftWindow"},
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
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: n, SessionTimeout: time.Minute, QueueTimeout: time.Minute})
	// n admitted visitors and n waiting ones, all last heard of an hour ago, as lib.lua keeps them
	// (arriving them one by one would take longer than the shortest timeouts under the race
	// detector, and later arrivals would free the first ones' slots).
	base := env.Prefix + ":waitroom:{r}:"
	then := float64(time.Now().Add(-time.Hour).UnixMilli())
	pipe := env.Client.Pipeline()
	for i := range n {
		admitted, waiting := fmt.Sprintf("a%d", i), fmt.Sprintf("w%d", i)
		pipe.ZAdd(ctx, base+"active", redis.Z{Score: then, Member: admitted})
		pipe.ZAdd(ctx, base+"line", redis.Z{Score: float64(1<<52 + i), Member: waiting})
		pipe.ZAdd(ctx, base+"seen", redis.Z{Score: then, Member: waiting})
		pipe.HSet(ctx, base+"since", waiting, int64(then))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := room.Stats(ctx); err != nil || st.Active != n || st.Waiting != n {
		t.Fatalf("before the pass: %d active, %d waiting, %v; want %d of each", st.Active, st.Waiting, err, n)
	}
	res, err := c.MaintainOnce(ctx)
	if err != nil || res.Freed != n || res.Abandoned != n {
		t.Fatalf("MaintainOnce = %+v, %v; want %d freed and %d abandoned", res, err, n, n)
	}
	st, err := room.Stats(ctx)
	if err != nil || st.Active != 0 || st.Waiting != 0 {
		t.Fatalf("after the pass: %d active, %d waiting, %v; want none", st.Active, st.Waiting, err)
	}
	// The line moves again: a new visitor is admitted at once.
	if st := arrive(t, room, "new"); st.State != waitroom.Admitted {
		t.Fatalf("a new visitor after the pass: %+v, want admitted", st)
	}
}
