package queue

import (
	"context"
	"errors"
	"sync"
	"time"
)

// periodic is the lifecycle of a background loop (Maintainer, BacklogMonitor): Start runs tick at
// once and then every interval until the context ends or Stop is called; Stop cancels and waits
// for the tick under way.
type periodic struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *periodic) start(ctx context.Context, what string, interval time.Duration, tick func(context.Context)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return errors.New("queue: " + what + " already started")
	}
	ctx, p.cancel = context.WithCancel(ctx)
	done := make(chan struct{})
	p.done = done
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

func (p *periodic) stop() {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.cancel, p.done = nil, nil
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
