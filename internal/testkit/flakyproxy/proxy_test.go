package flakyproxy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/flakyproxy"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A dropped reply makes go-redis send the command again: an INCR behind the proxy counts twice,
// which is the failure the proxy exists to show.
func TestDroppedReplyIsRetried(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	client, proxy := flakyproxy.NewClient(t, env)
	ctx := context.Background()
	key := env.Prefix + ":n"
	rule := proxy.DropReplies(func(args []string) bool { return strings.EqualFold(args[0], "incr") }, 1)
	got, err := client.Incr(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got != 2 || rule.Dropped() != 1 {
		t.Fatalf("INCR answered %d with %d replies dropped, want 2 (ran twice) and 1", got, rule.Dropped())
	}
	// Replies that match no rule pass, large ones whole.
	big := strings.Repeat("x", 3<<20)
	if err := client.Set(ctx, key+":big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := client.Get(ctx, key+":big").Result(); err != nil || v != big {
		t.Fatalf("GET through the proxy: %d bytes, %v", len(v), err)
	}
}
