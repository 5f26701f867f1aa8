package testwait

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	Until(t, 10*time.Second, "the third look", func() bool { return n.Add(1) == 3 })
	if got := n.Load(); got != 3 {
		t.Fatalf("looked %d times, want 3", got)
	}
}

func TestUntilNilReturnsOnceTheConditionIsMet(t *testing.T) {
	var n atomic.Int32
	UntilNil(t, 10*time.Second, func() error {
		if n.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if got := n.Load(); got != 3 {
		t.Fatalf("looked %d times, want 3", got)
	}
}

// A condition that never holds fails the test once the time is up, with what was awaited.
func TestUntilFailsWhenTheTimeIsUp(t *testing.T) {
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(rec, 20*time.Millisecond, "nothing", func() bool { return false })
	}()
	<-done
	if rec.failure != "timed out after 20ms waiting for nothing" {
		t.Fatalf("failure %q", rec.failure)
	}
}

// recorder is a testing.TB whose Fatalf records the message and ends the goroutine, as the real
// one does.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
