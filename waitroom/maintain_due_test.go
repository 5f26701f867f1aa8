package waitroom_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// roomsWithVisitors creates the rooms, each with one visitor admitted ("in") and one waiting
// ("gone", who never polls again), and returns their handles.
func roomsWithVisitors(t *testing.T, c *waitroom.Client, cfg waitroom.RoomConfig, names ...string) []*waitroom.Room {
	t.Helper()
	rooms := make([]*waitroom.Room, len(names))
	for i, name := range names {
		if _, err := c.SetRoom(context.Background(), name, cfg); err != nil {
			t.Fatal(err)
		}
		r, err := c.Room(name)
		if err != nil {
			t.Fatal(err)
		}
		arrive(t, r, "in")
		if st := arrive(t, r, "gone"); st.State != waitroom.Waiting {
			t.Fatalf("second visitor of %s: %+v, want waiting", name, st)
		}
		rooms[i] = r
	}
	return rooms
}

// A pass visits only rooms with something due: among hundreds of idle rooms, the one whose
// waiting visitor fell silent is the only one visited, and the visitor leaves the line. A room
// stored without an entry in the due index (by an older version) is found by the first pass's
// sweep of the rooms set.
func TestMaintainVisitsOnlyDueRooms(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := newClient(t, env, waitroom.Config{})
		const idle = 200
		for i := range idle {
			if _, err := c.SetRoom(ctx, fmt.Sprintf("idle%03d", i), waitroom.RoomConfig{MaxActive: 1}); err != nil {
				t.Fatal(err)
			}
		}
		cfg := waitroom.RoomConfig{MaxActive: 1, QueueTimeout: time.Second, SessionTimeout: time.Hour}
		old := roomsWithVisitors(t, c, cfg, "old")[0]
		// As an older version left it: no entry, and on a Cluster no slot announced.
		if err := env.Client.ZRem(ctx, waitroom.DueKeyOf(c, "old"), "old").Err(); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Del(ctx, waitroom.DueSlotsKey(c)).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := c.MaintainOnce(ctx)
		if err != nil || res.Swept != idle+1 {
			t.Fatalf("first pass = %+v, %v; want the rooms set swept (%d rooms)", res, err, idle+1)
		}
		// On a Cluster the sweep announced the rooms' slots and marked the set complete: passes
		// read only those shards from now on.
		if slots, err := env.Client.SMembers(ctx, waitroom.DueSlotsKey(c)).Result(); err != nil ||
			env.Cluster && (len(slots) < 2 || len(slots) > idle+2 || !slices.Contains(slots, "complete")) {
			t.Fatalf("slots in use after the sweep: %v, %v; want the rooms' slots and the mark", slots, err)
		}
		// waitAbandoned runs passes until r's line is empty and returns how many visitors they
		// removed from lines, after the abandoned already counted.
		waitAbandoned := func(r *waitroom.Room, abandoned int) int {
			testwait.UntilNil(t, 30*time.Second, func() error {
				res, err := c.MaintainOnce(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if res.Rooms > 1 {
					t.Fatalf("a pass visited %d rooms, want only the one with work due", res.Rooms)
				}
				abandoned += res.Abandoned
				if st, err := r.Stats(ctx); err != nil || st.Waiting != 0 {
					return fmt.Errorf("%d waiting in %s, %w", st.Waiting, r.Name(), err)
				}
				return nil
			})
			return abandoned
		}
		// The sweep's pass may have found the visitor silent already (a slow machine).
		if n := waitAbandoned(old, res.Abandoned); n != 1 {
			t.Fatalf("%d visitors abandoned the old room's line, want 1", n)
		}
		if res, err := c.MaintainOnce(ctx); err != nil || res.Rooms != 0 || res.Swept != 0 {
			t.Fatalf("pass with nothing due = %+v, %v; want no room visited", res, err)
		}

		late := roomsWithVisitors(t, c, cfg, "late")[0]
		if n := waitAbandoned(late, 0); n != 1 {
			t.Fatalf("%d visitors abandoned the late room's line, want 1", n)
		}
		// The admitted visitors are idle for an hour: nothing is due before then.
		if res, err := c.MaintainOnce(ctx); err != nil || res.Rooms != 0 {
			t.Fatalf("pass after the work was done = %+v, %v; want no room visited", res, err)
		}
		// Shorter timeouts make the room due at once: its admitted visitor goes idle by them.
		if _, err := c.SetRoom(ctx, "late", waitroom.RoomConfig{MaxActive: 1, QueueTimeout: time.Second, SessionTimeout: time.Second}); err != nil {
			t.Fatal(err)
		}
		testwait.UntilNil(t, 30*time.Second, func() error {
			if _, err := c.MaintainOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if st, err := late.Stats(ctx); err != nil || st.Active != 0 {
				return fmt.Errorf("%d active in late, %w", st.Active, err)
			}
			return nil
		})
	})
}

// A room whose housekeeping fails is named in the error and its entry moves to its next try (a
// backoff of at least a second): the other rooms due in the same pass are maintained.
func TestMaintainIsolatesAFailingRoom(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		c := newClient(t, env, waitroom.Config{})
		cfg := waitroom.RoomConfig{MaxActive: 1, QueueTimeout: time.Second}
		rooms := roomsWithVisitors(t, c, cfg, "broken", "late")
		// The broken room's set of admitted visitors is a string: its housekeeping script fails.
		if err := env.Client.Set(ctx, env.Prefix+":waitroom:{broken}:active", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var failedBefore time.Time // when the pass in which it last failed started
		testwait.UntilNil(t, 30*time.Second, func() error {
			before := time.Now()
			res, err := c.MaintainOnce(ctx)
			if res.Failed > 0 {
				if err == nil || !strings.Contains(err.Error(), "broken") {
					t.Fatalf("pass with a failure = %+v, %v; want the error to name the room", res, err)
				}
				failedBefore = before
			}
			if st, err := rooms[1].Stats(ctx); err != nil || st.Waiting != 0 || failedBefore.IsZero() {
				return fmt.Errorf("late room: %d waiting, %w; broken room failed: %t", st.Waiting, err, !failedBefore.IsZero())
			}
			return nil
		})
		next, err := env.Client.ZScore(ctx, waitroom.DueKeyOf(c, "broken"), "broken").Result()
		if err != nil {
			t.Fatal(err)
		}
		if at := time.UnixMilli(int64(next)); at.Before(failedBefore.Add(time.Second - time.Millisecond)) {
			t.Fatalf("the failing room is due again %s after its pass started; want a backoff of a second", at.Sub(failedBefore))
		}
	})
}
