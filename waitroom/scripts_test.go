package waitroom_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// TestScriptsWithoutFunctions: on a store without FUNCTION (Redis before 7, Redis-compatible
// stores) every room script runs as an EVALSHA script that starts with lib.lua, and decides as
// it does as a function.
func TestScriptsWithoutFunctions(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	rdb, counts := redistest.WithoutFunctions(t, env)
	ctx := context.Background()
	c, err := waitroom.NewClient(rdb, waitroom.Config{Prefix: env.Prefix, PassKeys: [][]byte{testKey()},
		Hooks: waitroom.Hooks{RedisError: func(room string, err error) { t.Errorf("%s decided without Redis: %v", room, err) }}})
	if err != nil {
		t.Fatal(err)
	}
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1})
	if st := arrive(t, room, "a"); st.State != waitroom.Admitted {
		t.Fatalf("first arrival: %+v", st)
	}
	if st := arrive(t, room, "b"); st.State != waitroom.Waiting || st.Position != 1 {
		t.Fatalf("second arrival: %+v", st)
	}
	if held, _, _, err := room.Touch(ctx, "a"); err != nil || !held {
		t.Fatalf("Touch: %v, %v", held, err)
	}
	if s, err := room.Stats(ctx); err != nil || s.Active != 1 || s.Waiting != 1 || s.Admitted != 1 {
		t.Fatalf("Stats: %+v, %v", s, err)
	}
	if released, err := room.Release(ctx, "a"); err != nil || !released {
		t.Fatalf("Release: %v, %v", released, err)
	}
	if res, err := c.MaintainOnce(ctx); err != nil || res.Rooms != 1 {
		t.Fatalf("MaintainOnce: %+v, %v", res, err)
	}
	if err := c.ResetRoom(ctx, "r"); err != nil {
		t.Fatalf("ResetRoom: %v", err)
	}
	if err := c.DeleteRoom(ctx, "r"); err != nil {
		t.Fatalf("DeleteRoom: %v", err)
	}
	functions, evals := counts.Counts()
	// The one LOAD of the rooms' scripts (the poll limiter has not run: no page was served).
	if functions != 1 || evals == 0 {
		t.Fatalf("%d FUNCTION/FCALL commands (want the LOAD that found none), %d scripts", functions, evals)
	}
}
