package store

import (
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// Every key of a queue carries its hash tag, and ParseHashTag reads the queue back from it.
func TestKeysCarryTheHashTag(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, redistest.New(t))
	tag := HashTag("shop", "mail")
	if tag != "{shop:mail}" {
		t.Fatalf("HashTag = %q, want {shop:mail}", tag)
	}
	k := s.keys.get("shop", "mail")
	for _, key := range append(k.all[:len(k.all)-1], k.channel) {
		if want := s.cfg.Prefix + ":" + tag + ":"; len(key) <= len(want) || key[:len(want)] != want {
			t.Errorf("key %q does not start with %q", key, want)
		}
	}
	if name, ok := ParseHashTag(tag); !ok || name != (QueueName{"shop", "mail"}) {
		t.Errorf("ParseHashTag(%q) = %v, %v", tag, name, ok)
	}
	for _, bad := range []string{"shop:mail", "{shop:mail", "shop:mail}", "{shopmail}"} {
		if _, ok := ParseHashTag(bad); ok {
			t.Errorf("ParseHashTag(%q) accepted it", bad)
		}
	}
}

// The due index shard a queue's scripts write is in the queue's hash slot on a Cluster, as Redis
// computes slots, so the scripts run there; keySlot agrees with Redis's CLUSTER KEYSLOT.
func TestDueShardSharesTheQueuesSlot(t *testing.T) {
	t.Parallel()
	env := redistest.NewCluster(t)
	ctx := t.Context()
	cache := newKeyCache(env.Prefix, true)
	for i := range 50 {
		k := cache.get("ns"+strconv.Itoa(i), "q")
		for _, key := range []string{k.jobs(), k.due(), "plain" + strconv.Itoa(i), "{}x", "a{b"} {
			want, err := env.Client.ClusterKeySlot(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got := keySlot(key); int64(got) != want {
				t.Fatalf("keySlot(%q) = %d, Redis says %d", key, got, want)
			}
		}
		if keySlot(k.due()) != keySlot(k.jobs()) {
			t.Fatalf("due shard %q is not in the slot of %q", k.due(), k.jobs())
		}
	}
	if shards := dueShards(env.Prefix, true); len(shards) != clusterSlots {
		t.Fatalf("%d shards, want one per slot", len(shards))
	}
}
