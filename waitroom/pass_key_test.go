package waitroom_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

func TestSharedPassKey(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := context.Background()
	first, err := waitroom.SharedPassKey(ctx, env.Client, env.Prefix)
	if err != nil || len(first) < 32 {
		t.Fatalf("made key %q, %v", first, err)
	}
	// Another instance on the same Redis and prefix gets the same key, and the key is usable.
	second, err := waitroom.SharedPassKey(ctx, env.Client, env.Prefix)
	if err != nil || string(second) != string(first) {
		t.Fatalf("second key %q differs from %q (%v)", second, first, err)
	}
	if _, err := waitroom.NewClient(env.Client, waitroom.Config{Prefix: env.Prefix, PassKeys: [][]byte{first}}); err != nil {
		t.Fatalf("NewClient with the shared key: %v", err)
	}
	// It is kept where instances of every version look for it.
	raw, err := env.Client.Get(ctx, env.Prefix+":waitroom:pass_key").Result()
	if err != nil || raw != string(first) {
		t.Fatalf("raw key %q, %v; want %q", raw, err, first)
	}
	if _, err := waitroom.SharedPassKey(ctx, env.Client, "bad{prefix"); err == nil {
		t.Fatal("a prefix with a brace was accepted")
	}
}
