package waitroom_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// Ten visitors load the page once and never poll; one behind them polls. A freed slot goes to the
// polling one (through the other instance), the silent ones keep their place numbers, and the
// first of them comes in at the next free slot once it polls again.
//
// The poll interval is long (a visitor stays live for two of them, 6s) so that a visitor the test
// has just seen poll still counts as live a few round trips later on a loaded machine; the only
// wait on the clock is for the silent ones to go quiet, which the test waits for as a condition.
func TestSilentVisitorsAtTheFrontAreSkipped(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		keys := [][]byte{testKey()}
		cfg := waitroom.Config{PassKeys: keys, PollInterval: 3 * time.Second}
		one := newRoom(t, newClient(t, env, cfg), waitroom.RoomConfig{MaxActive: 2, QueueTimeout: time.Hour})
		two, err := newClient(t, env, cfg).Room("r")
		if err != nil {
			t.Fatal(err)
		}
		arrive(t, one, "a1")
		arrive(t, one, "a2")
		for i := range 10 {
			if st := arrive(t, one, fmt.Sprintf("silent-%d", i)); st.Position != i+1 {
				t.Fatalf("silent-%d: %+v, want place %d", i, st, i+1)
			}
		}
		if st := arrive(t, two, "live"); st.State != waitroom.Waiting || st.Position != 11 {
			t.Fatalf("live: %+v, want waiting at 11", st)
		}
		release(t, one, "a1")
		testwait.UntilNil(t, 2*time.Minute, func() error {
			if st := arrive(t, two, "live"); st.State != waitroom.Admitted {
				return fmt.Errorf("live visitor still %+v", st)
			}
			return nil
		})
		// One slot was free: only the live visitor took it, and the silent ones are still in line
		// in their order.
		if st := arrive(t, one, "silent-1"); st.State != waitroom.Waiting || st.Position != 2 || st.Length != 10 || st.Active != 2 {
			t.Fatalf("silent-1 after the live one came in: %+v, want waiting at 2 of 10 with 2 active", st)
		}
		// silent-0 is back (it polls): the next free slot is its own, not silent-1's, which
		// polled too.
		arrive(t, one, "silent-0")
		release(t, two, "a2")
		if st := arrive(t, two, "silent-1"); st.State != waitroom.Waiting {
			t.Fatalf("silent-1 took the slot of silent-0, which had polled: %+v", st)
		}
		if st := arrive(t, two, "silent-0"); st.State != waitroom.Admitted {
			t.Fatalf("silent-0 back at the front: %+v, want admitted", st)
		}
	})
}

// A live visitor ahead is never skipped: the one behind it waits (both poll within the grace).
func TestLiveVisitorAheadIsNotSkipped(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		r := newRoom(t, newClient(t, env, waitroom.Config{PollInterval: time.Minute}), waitroom.RoomConfig{MaxActive: 1})
		arrive(t, r, "in")
		arrive(t, r, "first")
		arrive(t, r, "second")
		release(t, r, "in")
		if st := arrive(t, r, "second"); st.State != waitroom.Waiting || st.Position != 2 {
			t.Fatalf("second took the place of a live first: %+v", st)
		}
		if st := arrive(t, r, "first"); st.State != waitroom.Admitted {
			t.Fatalf("first: %+v, want admitted", st)
		}
	})
}
