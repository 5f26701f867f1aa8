// Package startstop is the one lifecycle of Sluice's background loops (maintainers, dispatchers,
// deliverers, samplers): a service starts with Start(ctx), stops with Stop, may be stopped twice
// or from two goroutines at once, and may be started again after it stopped. River's
// rivershared/startstop is the model.
//
// A service embeds Base and starts its loop with Base.Run; Every is the loop of a service that
// does one step at a fixed interval; StartAll and StopAll run a list of services in order, the
// way the server starts its background work and stops it in reverse.
package startstop

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Service is a background loop with a lifetime.
type Service interface {
	// Start runs the service until ctx ends or Stop is called. It returns at once.
	Start(ctx context.Context) error
	// Stop ends the service and waits for the work under way. It is safe to call twice, from
	// two goroutines at once, and on a service that never started.
	Stop()
}

// ErrAlreadyStarted is returned by Run (and so by a service's Start) while the service runs.
var ErrAlreadyStarted = errors.New("startstop: service already started")

// Base is the state of one service's lifecycle. Its zero value is a stopped service.
type Base struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{} // closed when the running loop returns; nil while stopped
}

// Run starts run in its own goroutine on a context that Stop cancels (and that ends with ctx).
// It returns ErrAlreadyStarted if a loop runs already.
func (b *Base) Run(ctx context.Context, run func(ctx context.Context)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped != nil {
		return ErrAlreadyStarted
	}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	b.cancel, b.stopped = cancel, stopped
	go func() {
		defer close(stopped)
		defer cancel()
		run(ctx)
	}()
	return nil
}

// Stop cancels the loop's context and waits until run returns. Every concurrent Stop waits for
// the same end; a Stop of a stopped service returns at once.
func (b *Base) Stop() {
	b.mu.Lock()
	cancel, stopped := b.cancel, b.stopped
	b.mu.Unlock()
	if stopped == nil {
		return
	}
	cancel()
	<-stopped
	b.mu.Lock()
	if b.stopped == stopped { // not already restarted by another goroutine
		b.cancel, b.stopped = nil, nil
	}
	b.mu.Unlock()
}

// Running reports whether a loop runs now.
func (b *Base) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped != nil
}

// Every calls step at once and then every interval until ctx ends; it is the body of a loop that
// Run starts. A step that outlasts the interval delays the next one (ticks are not queued).
func Every(ctx context.Context, interval time.Duration, step func(ctx context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// StartAll starts services in order. If one fails to start, the ones already started are
// stopped, in reverse order, and its error is returned.
func StartAll(ctx context.Context, services ...Service) error {
	for i, s := range services {
		if err := s.Start(ctx); err != nil {
			StopAll(services[:i]...)
			return err
		}
	}
	return nil
}

// StopAll stops services in reverse order, each after the one started after it has stopped.
func StopAll(services ...Service) {
	for i := len(services) - 1; i >= 0; i-- {
		services[i].Stop()
	}
}
