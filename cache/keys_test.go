package cache

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/redisx"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestKeySlot(t *testing.T) {
	t.Parallel()
	// Reference values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"123456789":            12739,
		"foo":                  12182,
		"{user1000}.following": redisx.KeySlot("user1000"),
		"a{}b":                 redisx.KeySlot("a{}b"),
	} {
		if got := redisx.KeySlot(key); got != want {
			t.Errorf("redisx.KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	env := redistest.NewCluster(t)
	for _, k := range []string{"sluice:cache:{42}", "x{a}y", "no-tag", "{}", "a{b"} {
		want, err := env.Client.ClusterKeySlot(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := redisx.KeySlot(k); int64(got) != want {
			t.Errorf("redisx.KeySlot(%q) = %d, Redis says %d", k, got, want)
		}
	}
}

func TestKeyNames(t *testing.T) {
	t.Parallel()
	ks := newKeyspace("app*1")
	if got := ks.record("user:7"); got != "app*1:cache:{user:7}" {
		t.Errorf("record = %q", got)
	}
	if got := ks.channel("user:7"); got != "app*1:cache:{user:7}:n" {
		t.Errorf("channel = %q", got)
	}
	if ks.pattern != `app\*1:cache:{*}:n` {
		t.Errorf("pattern = %q", ks.pattern)
	}
	type id int
	if keyString(42) != "42" || keyString(id(7)) != "7" || keyString("s") != "s" {
		t.Errorf("keyString")
	}
}
