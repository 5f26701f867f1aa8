package notify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func setup(t *testing.T, env *redistest.Env, cfg Config) (*Notifier, context.Context) {
	t.Helper()
	n := New(env.Client, cfg)
	t.Cleanup(n.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return n, ctx
}

// With channels unsubscribed as soon as they are idle (at once, or after a millisecond), waiters
// keep registering while an UNSUBSCRIBE of their channel is on its way: each must still be
// confirmed subscribed only once Redis has its new SUBSCRIBE, so that a publish made after
// Register returned always wakes it.
func TestNoLostWakeupWhileUnsubscribing(t *testing.T) {
	t.Parallel()
	for _, idle := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprint("idle=", idle), func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, env *redistest.Env) {
				n, ctx := setup(t, env, Config{Idle: idle})
				const rounds, channels = 100, 3
				for round := range rounds {
					var wg sync.WaitGroup
					for i := range channels {
						ch := fmt.Sprintf("%s:ch%d", env.Prefix, i)
						wg.Go(func() {
							w, err := n.Register(ctx, []string{ch}, nil)
							if err != nil {
								t.Errorf("round %d: Register: %v", round, err)
								return
							}
							defer w.Stop()
							if err := env.Client.Publish(ctx, ch, "x").Err(); err != nil {
								t.Errorf("Publish: %v", err)
								return
							}
							select {
							case <-w.C:
							case <-time.After(time.Minute):
								t.Errorf("round %d: a publish after Register did not wake the waiter on %s", round, ch)
							}
						})
					}
					wg.Wait()
					if t.Failed() {
						return
					}
				}
				testwait.Until(t, time.Minute, "no channel subscribed with nobody waiting", func() bool {
					return n.Subscribed() == 0
				})
			})
		})
	}
}

// A channel stays subscribed for Config.Idle after its last waiter left, and is then
// unsubscribed in Redis too.
func TestIdleChannelIsKeptThenUnsubscribed(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		kept, ctx := setup(t, env, Config{Idle: time.Hour})
		soon, _ := setup(t, env, Config{Idle: 20 * time.Millisecond})
		ch := env.Prefix + ":idle"
		for _, n := range []*Notifier{kept, soon} {
			w, err := n.Register(ctx, []string{ch}, nil)
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
		}
		if kept.Subscribed() != 1 {
			t.Fatalf("kept notifier has %d channels subscribed right after its waiter left, want 1", kept.Subscribed())
		}
		testwait.Until(t, time.Minute, "the idle channel dropped by one notifier only", func() bool {
			return soon.Subscribed() == 0 && numSub(t, env, ch) == 1
		})
	})
}

// A waiter's fn gets each payload, and Close wakes waiters and refuses new ones.
func TestPayloadsAndClose(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		n, ctx := setup(t, env, Config{})
		ch := env.Prefix + ":payload"
		got := make(chan string, 1)
		w, err := n.Register(ctx, []string{ch}, func(p string) { got <- p })
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Publish(ctx, ch, "hello").Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-got:
			if p != "hello" {
				t.Fatalf("payload %q, want hello", p)
			}
		case <-time.After(time.Minute):
			t.Fatal("no payload")
		}
		<-w.C
		n.Close()
		select {
		case <-w.C:
		case <-time.After(time.Minute):
			t.Fatal("Close did not wake the waiter")
		}
		if !w.Closed() {
			t.Fatal("waiter does not report its notifier closed")
		}
		if _, err := n.Register(ctx, []string{ch}, nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("Register after Close = %v, want ErrClosed", err)
		}
	})
}

// numSub is the number of subscribers of a channel, on every master of a cluster.
func numSub(t *testing.T, env *redistest.Env, ch string) int64 {
	t.Helper()
	var mu sync.Mutex
	var total int64
	count := func(ctx context.Context, c *redis.Client) error {
		m, err := c.PubSubNumSub(ctx, ch).Result()
		mu.Lock()
		total += m[ch]
		mu.Unlock()
		return err
	}
	var err error
	switch c := env.Client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(context.Background(), count)
	case *redis.Client:
		err = count(context.Background(), c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// When the subscription's connection is lost, go-redis resubscribes on a new one; a notification
// published in between reached nobody, so the waiters are woken to look again instead of sleeping
// until their own (long) wake-up interval.
func TestResubscribeAfterALostConnectionWakesWaiters(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	name := "notify-resubscribe-" + strings.ReplaceAll(env.Prefix, ":", "-")
	rdb := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(env.URL, "redis://"), ClientName: name})
	t.Cleanup(func() { _ = rdb.Close() })
	n := New(rdb, Config{})
	t.Cleanup(n.Close)
	ctx := t.Context()
	w, err := n.Register(ctx, []string{env.Prefix + ":lost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case <-w.C:
		t.Fatal("woken before anything happened")
	default:
	}
	killed := redistest.KillSubscriptions(t, env, name)
	if killed != 1 {
		t.Fatalf("killed %d subscription connections named %s, want 1", killed, name)
	}
	select {
	case <-w.C:
	case <-time.After(30 * time.Second):
		t.Fatal("the resubscription after a lost connection did not wake the waiter")
	}
	// A waiter that keys its work on payloads learns that some may have been lost.
	if got := w.Resubscribed(); got != 1 {
		t.Fatalf("Resubscribed() = %d after one lost connection, want 1", got)
	}
	if err := env.Client.Publish(ctx, env.Prefix+":lost", "x").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.C:
	case <-time.After(30 * time.Second):
		t.Fatal("a message after the resubscription did not wake the waiter")
	}
	if got := w.Resubscribed(); got != 1 {
		t.Fatalf("Resubscribed() = %d after a message, want it unchanged (1)", got)
	}
}
