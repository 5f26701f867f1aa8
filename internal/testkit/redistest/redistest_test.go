package redistest

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestEachIsolatesAndCleansUp(t *testing.T) {
	t.Parallel()
	Each(t, func(t *testing.T, env *Env) {
		ctx := context.Background()
		key := env.Prefix + ":{k}:a"
		if err := env.Client.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatalf("set: %v", err)
		}
		got, err := env.Client.Get(ctx, key).Result()
		if err != nil || got != "v" {
			t.Fatalf("get = %q, %v; want v", got, err)
		}
		if !strings.HasPrefix(env.Prefix, "t") {
			t.Fatalf("prefix %q", env.Prefix)
		}
		if err := DeletePrefix(ctx, env.Client, env.Prefix); err != nil {
			t.Fatalf("delete prefix: %v", err)
		}
		if n := env.Client.Exists(ctx, key).Val(); n != 0 {
			t.Fatalf("key still exists after DeletePrefix")
		}
	})
}

func TestPrefixesAreUnique(t *testing.T) {
	t.Parallel()
	a, b := New(t), New(t)
	if a.Prefix == b.Prefix {
		t.Fatalf("two envs share prefix %q", a.Prefix)
	}
}

func TestClusterSpreadsSlots(t *testing.T) {
	t.Parallel()
	env := NewCluster(t)
	slots, err := env.Client.ClusterSlots(context.Background()).Result()
	if err != nil {
		t.Fatalf("cluster slots: %v", err)
	}
	if len(slots) != 3 {
		t.Fatalf("cluster has %d slot ranges, want 3", len(slots))
	}
}

func TestSentinelFailsOver(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old, err := s.KillPrimary(ctx)
	if err != nil {
		t.Fatalf("kill primary: %v", err)
	}
	now, err := s.WaitFailover(ctx, old)
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	if now == old {
		t.Fatalf("primary still %s", old)
	}
}

func TestSlotRangesCoverEverySlot(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 5; n++ {
		next := 0
		for _, r := range slotRanges(n) {
			if r[0] != next || r[1] < r[0] {
				t.Fatalf("%d masters: range %v after slot %d", n, r, next-1)
			}
			next = r[1] + 1
		}
		if next != 16384 {
			t.Fatalf("%d masters: ranges end at %d, want 16383", n, next-1)
		}
	}
}
