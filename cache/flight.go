package cache

import (
	"sync"
	"sync/atomic"
	"time"
)

// flight is one shared resolution of a missed key inside the process.
type flight[V any] struct {
	done chan struct{}
	val  V
	err  error
	// decided is the local (monotonic) time just before the Redis command whose reply decided the
	// result was sent. A caller whose own GET reply arrived before it knows that command ran after
	// its GET, which strong mode needs (see Store.miss).
	decided time.Time
	joiners atomic.Int32 // callers that joined besides the leader
}

// flightGroup deduplicates concurrent resolutions of a key.
type flightGroup[V any] struct {
	mu sync.Mutex
	m  map[string]*flight[V]
}

// join returns the key's flight in progress, or a new one that the caller (leader) must run and
// finish.
func (g *flightGroup[V]) join(key string) (f *flight[V], leader bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.m[key]; f != nil {
		f.joiners.Add(1)
		return f, false
	}
	if g.m == nil {
		g.m = make(map[string]*flight[V])
	}
	f = &flight[V]{done: make(chan struct{})}
	g.m[key] = f
	return f, true
}

// finish removes the flight and hands its result to everybody who joined it.
func (g *flightGroup[V]) finish(key string, f *flight[V], val V, err error) {
	g.mu.Lock()
	if g.m[key] == f {
		delete(g.m, key)
	}
	g.mu.Unlock()
	f.val, f.err = val, err
	close(f.done)
}
