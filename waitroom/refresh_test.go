package waitroom_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// settingsReads counts the reads of a room's settings (HGETALL of its config hash) that go
// through a client.
func settingsReads(room string) *redistest.Counter {
	return &redistest.Counter{Match: func(cmd redis.Cmder) bool {
		return strings.EqualFold(cmd.Name(), "hgetall") && redistest.NamesKey(cmd, "{"+room+"}")
	}}
}

// The Maintainer's settings refresh reloads the rooms used since the refresh before and reads
// nothing of a room nobody uses (10,000 idle rooms cost Redis nothing); the idle room reloads at
// its next use, so a change made meanwhile by another instance is seen at once.
func TestIdleRoomCostsTheSettingsRefreshNothing(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := context.Background()
	keys := [][]byte{testKey()}
	rdb, err := redisx.NewClient(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	idleReads, busyReads := settingsReads("idle"), settingsReads("busy")
	rdb.AddHook(idleReads)
	rdb.AddHook(busyReads)
	c, err := waitroom.NewClient(rdb, waitroom.Config{Prefix: env.Prefix, PassKeys: keys, ConfigRefresh: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	other := newClient(t, env, waitroom.Config{PassKeys: keys})
	for _, name := range []string{"idle", "busy"} {
		if _, err := other.SetRoom(ctx, name, waitroom.RoomConfig{MaxActive: 1}); err != nil {
			t.Fatal(err)
		}
	}
	idle, busy := handle(t, c, "idle"), handle(t, c, "busy")
	for _, r := range []*waitroom.Room{idle, busy} {
		if _, err := r.Config(ctx); err != nil { // the first use loads the settings
			t.Fatal(err)
		}
	}
	m := waitroom.NewMaintainer(c, waitroom.MaintainerConfig{Interval: time.Hour})
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()

	// refreshes waits for n more settings refreshes, using the busy room meanwhile, so that
	// each refresh finds it used.
	refreshes := func(n int64) {
		t.Helper()
		until := waitroom.MaintainerRefreshes(m) + n
		testwait.Until(t, 2*time.Minute, "settings refreshes", func() bool {
			if _, err := busy.Config(ctx); err != nil { // a use: a refresh reloads the busy room
				t.Fatal(err)
			}
			return waitroom.MaintainerRefreshes(m) >= until
		})
	}
	// The refresh after the idle room's one use may reload it once; count from after that.
	refreshes(2)
	idleBefore, busyBefore := idleReads.Count(), busyReads.Count()
	refreshes(5)
	if got := idleReads.Count() - idleBefore; got != 0 {
		t.Fatalf("five refreshes read the idle room's settings %d times, want 0", got)
	}
	if busyReads.Count() == busyBefore {
		t.Fatal("five refreshes did not read the busy room's settings, which was used meanwhile")
	}

	if _, err := other.SetRoom(ctx, "idle", waitroom.RoomConfig{MaxActive: 1, Language: "zh"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := idle.Config(ctx)
	if err != nil || cfg.Language != "zh" {
		t.Fatalf("the idle room's settings at its next use: %+v, %v; want the language set meanwhile (zh)", cfg, err)
	}
}

func handle(t *testing.T, c *waitroom.Client, name string) *waitroom.Room {
	t.Helper()
	r, err := c.Room(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
