package duework

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// On a Cluster a pass reads every shard until the slots in use are marked announced, and then
// only the shards of the announced slots: an entry written by a thing whose slot nobody announced
// (a version that did not announce) is found before the mark, and after it only once its slot is
// announced, as a sweep does.
func TestClusterPassReadsTheSlotsInUse(t *testing.T) {
	t.Parallel()
	env := redistest.NewCluster(t)
	ctx := t.Context()
	base := env.Prefix + ":due"
	past := float64(time.Now().Add(-time.Second).UnixMilli())
	for _, thing := range []string{"{announced}", "{unannounced}"} {
		if err := env.Client.ZAdd(ctx, Key(base, thing, true), redis.Z{Score: past, Member: thing}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := Announce(ctx, env.Client, base, true, "{announced}"); err != nil {
		t.Fatal(err)
	}
	due := func() []string {
		t.Helper()
		_, got, err := Due(ctx, env.Client, base, true, 10)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got
	}
	if got := due(); !slices.Equal(got, []string{"{announced}", "{unannounced}"}) {
		t.Fatalf("before the mark a pass found %v, want both things (every shard)", got)
	}
	if err := MarkAnnounced(ctx, env.Client, base, true); err != nil {
		t.Fatal(err)
	}
	if got := due(); !slices.Equal(got, []string{"{announced}"}) {
		t.Fatalf("after the mark a pass found %v, want only the announced thing", got)
	}
	_, shards, err := timeAndShards(ctx, env.Client, base, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 1 {
		t.Fatalf("a pass reads %d shards, want the one announced", len(shards))
	}
	if err := Announce(ctx, env.Client, base, true, "{unannounced}"); err != nil {
		t.Fatal(err)
	}
	if got := due(); len(got) != 2 {
		t.Fatalf("after announcing its slot a pass found %v, want both things", got)
	}
}

// On a standalone server there is one key and nothing to announce: Announce and MarkAnnounced
// write nothing.
func TestStandaloneAnnouncesNothing(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := t.Context()
	base := env.Prefix + ":due"
	if err := Announce(ctx, env.Client, base, false, "{x}"); err != nil {
		t.Fatal(err)
	}
	if err := MarkAnnounced(ctx, env.Client, base, false); err != nil {
		t.Fatal(err)
	}
	if n, err := env.Client.Exists(ctx, SlotsKey(base)).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS slots = %d, %v; want no key on a standalone server", n, err)
	}
}
