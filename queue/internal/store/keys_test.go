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
// computes slots, so the scripts run there.
func TestDueShardSharesTheQueuesSlot(t *testing.T) {
	t.Parallel()
	env := redistest.NewCluster(t)
	ctx := t.Context()
	cache := newKeyCache(env.Prefix, true)
	for i := range 50 {
		k := cache.get("ns"+strconv.Itoa(i), "q")
		due, err := env.Client.ClusterKeySlot(ctx, k.due()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if jobs := env.Client.ClusterKeySlot(ctx, k.jobs()).Val(); due != jobs {
			t.Fatalf("due shard %q is in slot %d, not in the slot %d of %q", k.due(), due, jobs, k.jobs())
		}
	}
}
