package queue

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestDispatchHandsEveryJobOnceAndStaysBounded(t *testing.T) {
	t.Parallel()
	var d dispatch
	quit, stop := make(chan struct{}), make(chan struct{})
	const goroutines, jobs = 4, 5000
	var taken atomic.Int64
	seen := make([]atomic.Int32, jobs)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			wake := make(chan struct{}, 1)
			for {
				j := d.take(wake, quit, stop)
				if j == nil {
					return
				}
				seen[j.d.Delivery].Add(1)
				taken.Add(1)
			}
		})
	}
	// A steady backlog: the queue is never empty for long, so only compaction bounds it.
	all := make([]heldJob, jobs)
	for i := 0; i < jobs; i += 10 {
		batch := make([]*heldJob, 10)
		for k := range batch {
			all[i+k].d.Delivery = i + k
			batch[k] = &all[i+k]
		}
		d.push(batch)
	}
	for taken.Load() < jobs {
		d.mu.Lock()
		if c := cap(d.queue); c > 4*jobs {
			d.mu.Unlock()
			t.Fatalf("queue array grew to %d", c)
		}
		d.mu.Unlock()
	}
	close(quit)
	wg.Wait()
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("job %d taken %d times", i, n)
		}
	}
	if n := len(d.drain()); n != 0 {
		t.Fatalf("%d jobs left", n)
	}
}

func TestDispatchLeavePassesTheTurn(t *testing.T) {
	t.Parallel()
	var d dispatch
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	d.parked = []chan struct{}{a, b}
	d.queue = []*heldJob{{}}
	d.wakeLocked() // wakes b, the most recent
	if len(b) != 1 || !d.waking {
		t.Fatal("b was not woken")
	}
	d.leave(b, false) // b stops before taking the job: a gets the turn
	if len(a) != 1 || !d.waking || len(d.parked) != 0 {
		t.Fatalf("turn not passed: a=%d waking=%v parked=%d", len(a), d.waking, len(d.parked))
	}
}
