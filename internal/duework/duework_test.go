package duework

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redisx"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// keySlot agrees with Redis's CLUSTER KEYSLOT, and a shard Key gives is in the slot of the key it
// was made for, as Redis computes slots: a script may write it.
func TestKeyIsInTheSlotOfItsThing(t *testing.T) {
	t.Parallel()
	env := redistest.NewCluster(t)
	ctx := t.Context()
	slot := func(key string) int64 {
		n, err := env.Client.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 50 {
		thing := env.Prefix + ":{ns" + strconv.Itoa(i) + ":q}:jobs"
		for _, key := range []string{thing, "plain" + strconv.Itoa(i), "{}x", "a{b"} {
			if got := redisx.KeySlot(key); int64(got) != slot(key) {
				t.Fatalf("redisx.KeySlot(%q) = %d, Redis says %d", key, got, slot(key))
			}
		}
		if shard := Key(env.Prefix+":due", thing, true); slot(shard) != slot(thing) {
			t.Fatalf("shard %q is not in the slot of %q", shard, thing)
		}
	}
	if shards := allShards("p:due"); len(shards) != redisx.ClusterSlots {
		t.Fatalf("%d shards, want one per slot", len(shards))
	}
	if got := Key("p:due", "{x}", false); got != "p:due" {
		t.Fatalf("standalone shard %q, want the one key", got)
	}
}

// Due reads only the entries due by Redis's clock, in every shard; Defer moves an entry that is
// there and adds none.
func TestDueReadsOnlyWhatIsDue(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := t.Context()
		base := env.Prefix + ":due"
		now := time.Now().UnixMilli()
		add := func(thing string, at int64) string {
			shard := Key(base, "{"+thing+"}", env.Cluster)
			if err := Announce(ctx, env.Client, base, env.Cluster, "{"+thing+"}"); err != nil {
				t.Fatal(err)
			}
			if err := env.Client.ZAdd(ctx, shard, redis.Z{Score: float64(at), Member: thing}).Err(); err != nil {
				t.Fatal(err)
			}
			return shard
		}
		add("past", now-1000)
		later := add("later", now+time.Hour.Milliseconds())
		if err := MarkAnnounced(ctx, env.Client, base, env.Cluster); err != nil {
			t.Fatal(err)
		}
		_, due, err := Due(ctx, env.Client, base, env.Cluster, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) != 1 || due[0] != "past" {
			t.Fatalf("due %v, want [past]", due)
		}
		if err := Defer(ctx, env.Client, later, "later", now-1000); err != nil {
			t.Fatal(err)
		}
		if err := Defer(ctx, env.Client, later, "absent", now-1000); err != nil {
			t.Fatal(err)
		}
		_, due, err = Due(ctx, env.Client, base, env.Cluster, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(due) != 2 {
			t.Fatalf("due %v after Defer, want past and later (and no absent)", due)
		}
	})
}

// A failing thing waits RetryMin, then twice as long with each failure in a row, at most
// RetryMax; a success starts it over.
func TestBackoffDoublesAndStartsOver(t *testing.T) {
	t.Parallel()
	var b Backoff[string]
	want := []time.Duration{RetryMin, 2 * RetryMin, 4 * RetryMin}
	for i, w := range want {
		if n, got := b.Failed("x"); n != i+1 || got != w {
			t.Fatalf("failure %d: %d, %v; want %d, %v", i+1, n, got, i+1, w)
		}
	}
	for range 20 {
		b.Failed("x")
	}
	if _, got := b.Failed("x"); got != RetryMax {
		t.Fatalf("after many failures the wait is %v, want %v", got, RetryMax)
	}
	b.Succeeded("x")
	if n, got := b.Failed("x"); n != 1 || got != RetryMin {
		t.Fatalf("after a success: %d, %v; want 1, %v", n, got, RetryMin)
	}
}
