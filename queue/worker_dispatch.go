package queue

import (
	"slices"
	"sync"
)

// dispatch hands fetched jobs to the handler goroutines. It wakes parked goroutines one at a time:
// a goroutine that takes a job while more are queued wakes one more, unless a wake-up is already
// under way. Short jobs are therefore run by the few goroutines already awake instead of waking
// every idle one (a wake-up costs more than a short job), while a burst of long jobs still spreads
// to every free handler within a few wake-up latencies.
type dispatch struct {
	mu     sync.Mutex
	queue  []*heldJob
	head   int
	parked []chan struct{} // parked goroutines, most recent last (woken first: warm caches)
	waking bool            // a goroutine was woken and has not taken the lock yet
}

// push queues jobs and wakes a parked goroutine if none is on its way.
func (d *dispatch) push(js []*heldJob) {
	d.mu.Lock()
	d.queue = append(d.queue, js...)
	d.wakeLocked()
	d.mu.Unlock()
}

func (d *dispatch) wakeLocked() {
	if d.waking || len(d.parked) == 0 || d.head == len(d.queue) {
		return
	}
	ch := d.parked[len(d.parked)-1]
	d.parked = d.parked[:len(d.parked)-1]
	d.waking = true
	ch <- struct{}{} // buffered: never blocks
}

// take returns the next job, parking until one is pushed; it returns nil once quit or stop is
// closed (the jobs still queued are then drained by the shutdown). wake is the calling goroutine's
// own channel, with a buffer of one.
func (d *dispatch) take(wake chan struct{}, quit, stop <-chan struct{}) *heldJob {
	woken := false
	for {
		select {
		case <-quit:
			d.leave(wake, woken)
			return nil
		case <-stop:
			d.leave(wake, woken)
			return nil
		default:
		}
		d.mu.Lock()
		if woken {
			d.waking = false
			woken = false
		}
		if d.head < len(d.queue) {
			j := d.queue[d.head]
			d.queue[d.head] = nil
			d.head++
			switch {
			case d.head == len(d.queue):
				d.queue, d.head = d.queue[:0], 0
			case d.head >= 64 && 2*d.head >= len(d.queue):
				// Never empty under a steady backlog: move the rest to the front so the array
				// does not grow without bound.
				n := copy(d.queue, d.queue[d.head:])
				clear(d.queue[n:])
				d.queue, d.head = d.queue[:n], 0
			}
			d.wakeLocked() // more queued: spread them, one wake-up at a time
			d.mu.Unlock()
			return j
		}
		d.parked = append(d.parked, wake)
		d.mu.Unlock()
		select {
		case <-wake:
			woken = true
		case <-quit:
		case <-stop:
		}
	}
}

// leave takes a goroutine that stops waiting out of the parked list. If it had been woken (and
// so holds the turn to take a job), the turn passes to another parked goroutine.
func (d *dispatch) leave(wake chan struct{}, woken bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.Index(d.parked, wake); i >= 0 {
		d.parked = slices.Delete(d.parked, i, i+1)
	}
	select {
	case <-wake: // woken while leaving
		woken = true
	default:
	}
	if woken {
		d.waking = false
		d.wakeLocked()
	}
}

// drain removes and returns every queued job.
func (d *dispatch) drain() []*heldJob {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := append([]*heldJob(nil), d.queue[d.head:]...)
	d.queue, d.head = d.queue[:0], 0
	return out
}

// queued is the number of jobs waiting for a goroutine.
func (d *dispatch) queued() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue) - d.head
}
