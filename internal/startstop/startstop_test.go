package startstop_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loop is a service that counts its steps.
type loop struct {
	startstop.Base
	steps atomic.Int64
}

func (l *loop) Start(ctx context.Context) error {
	return l.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, time.Millisecond, func(context.Context) { l.steps.Add(1) })
	})
}

var _ startstop.Service = (*loop)(nil)

func TestStartStop(t *testing.T) {
	t.Parallel()
	var l loop
	if l.Running() {
		t.Fatal("a zero service runs")
	}
	l.Stop() // a service that never started stops at once
	if err := l.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(t.Context()); !errors.Is(err, startstop.ErrAlreadyStarted) {
		t.Fatalf("second Start: %v, want ErrAlreadyStarted", err)
	}
	testwait.Until(t, time.Minute, "three steps", func() bool { return l.steps.Load() >= 3 })
	l.Stop()
	if l.Running() {
		t.Fatal("running after Stop")
	}
	after := l.steps.Load()
	l.Stop()
	if got := l.steps.Load(); got != after {
		t.Fatalf("steps went on after Stop: %d then %d", after, got)
	}
	// Started again after a stop.
	if err := l.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "another step", func() bool { return l.steps.Load() > after })
	l.Stop()
}

func TestConcurrentStopsAllWait(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	release := make(chan struct{})
	var ended atomic.Bool
	if err := b.Run(t.Context(), func(ctx context.Context) {
		<-ctx.Done()
		<-release // the loop takes a while to finish its step
		ended.Store(true)
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var early atomic.Int64
	for range 4 {
		wg.Go(func() {
			b.Stop()
			if !ended.Load() {
				early.Add(1)
			}
		})
	}
	time.AfterFunc(20*time.Millisecond, func() { close(release) })
	wg.Wait()
	if n := early.Load(); n != 0 {
		t.Fatalf("%d of 4 concurrent Stops returned before the loop ended", n)
	}
}

func TestParentContextEndsLoop(t *testing.T) {
	t.Parallel()
	var l loop
	ctx, cancel := context.WithCancel(t.Context())
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	l.Stop() // returns once the loop has seen the cancel
	if l.Running() {
		t.Fatal("running after its context ended and Stop")
	}
}

// failing is a service whose Start fails.
type failing struct{ stopped *[]string }

func (f failing) Start(context.Context) error { return errors.New("no") }
func (f failing) Stop()                       { *f.stopped = append(*f.stopped, "failing") }

// named records its stop.
type named struct {
	name    string
	stopped *[]string
}

func (n named) Start(context.Context) error { return nil }
func (n named) Stop()                       { *n.stopped = append(*n.stopped, n.name) }

func TestStartAllStopsStartedOnFailure(t *testing.T) {
	t.Parallel()
	var stopped []string
	err := startstop.StartAll(t.Context(), named{"a", &stopped}, named{"b", &stopped}, failing{&stopped}, named{"c", &stopped})
	if err == nil {
		t.Fatal("StartAll: no error from a failing service")
	}
	if got := len(stopped); got != 2 || stopped[0] != "b" || stopped[1] != "a" {
		t.Fatalf("stopped %v, want [b a]", stopped)
	}
	stopped = nil
	startstop.StopAll(named{"a", &stopped}, named{"b", &stopped})
	if stopped[0] != "b" || stopped[1] != "a" {
		t.Fatalf("StopAll order %v, want [b a]", stopped)
	}
}
