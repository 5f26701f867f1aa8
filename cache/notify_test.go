package cache

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestNotifierWakesOnlyItsChannel(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		ks := newKeyspace(env.Prefix)
		n := newNotifier(env.Client, ks.pattern)
		t.Cleanup(n.close)
		a, err := n.watch(ctx, ks.channel("a"))
		if err != nil {
			t.Fatal(err)
		}
		defer a.stop()
		b, err := n.watch(ctx, ks.channel("b"))
		if err != nil {
			t.Fatal(err)
		}
		defer b.stop()
		// The subscription is confirmed before watch returns, so this publish cannot be missed.
		if err := env.Client.Publish(ctx, ks.channel("b"), "").Err(); err != nil {
			t.Fatal(err)
		}
		<-b.c
		select {
		case <-a.c:
			t.Fatalf("a was woken by b's message")
		default:
		}
	})
}
