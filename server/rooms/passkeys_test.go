package rooms_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server/rooms"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestPassKeys(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := context.Background()
	long := strings.Repeat("k", 32)
	keys, err := rooms.PassKeys(ctx, env.Client, env.Prefix, long+", "+strings.Repeat("o", 40))
	if err != nil || len(keys) != 2 || string(keys[0]) != long {
		t.Fatalf("configured keys: %q, %v", keys, err)
	}
	for _, bad := range []string{"short", long + "," + long + "," + long} {
		if _, err := rooms.PassKeys(ctx, env.Client, env.Prefix, bad); err == nil {
			t.Errorf("PassKeys(%q) accepted", bad)
		}
	}
	// None configured: the first server makes one in Redis, the others use it.
	first, err := rooms.PassKeys(ctx, env.Client, env.Prefix, "")
	if err != nil || len(first) != 1 || len(first[0]) < 32 {
		t.Fatalf("made key: %q, %v", first, err)
	}
	second, err := rooms.PassKeys(ctx, env.Client, env.Prefix, "")
	if err != nil || string(second[0]) != string(first[0]) {
		t.Fatalf("second server's key %q differs from %q (%v)", second, first, err)
	}
}
