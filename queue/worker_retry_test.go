package queue_test

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

func TestExponentialBackoff(t *testing.T) {
	t.Parallel()
	b := queue.ExponentialBackoff{Base: 100 * time.Millisecond, Max: time.Second}
	for attempt, want := range map[int]time.Duration{
		0: 100 * time.Millisecond, 1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 500: time.Second,
	} {
		if got := b.RetryDelay(attempt, nil); got != want {
			t.Errorf("attempt %d: %s, want %s", attempt, got, want)
		}
	}
	j := queue.ExponentialBackoff{Base: time.Second, Max: time.Minute, Jitter: 0.5}
	for range 200 {
		if d := j.RetryDelay(3, nil); d > 4*time.Second || d < 2*time.Second {
			t.Fatalf("jittered delay %s outside 2s..4s", d)
		}
	}
	// Zero fields take the defaults: 1s base, 10m cap.
	if d := (queue.ExponentialBackoff{}).RetryDelay(1, nil); d != time.Second {
		t.Errorf("zero backoff first delay = %s", d)
	}
	if d := (queue.ExponentialBackoff{}).RetryDelay(40, nil); d != 10*time.Minute {
		t.Errorf("zero backoff cap = %s", d)
	}
	if d := queue.DefaultRetryPolicy.RetryDelay(1, nil); d > time.Second || d < 800*time.Millisecond {
		t.Errorf("default policy first delay = %s", d)
	}
}

func TestRetryErrorsWrap(t *testing.T) {
	t.Parallel()
	if err := queue.SkipRetry(io.EOF); !errors.Is(err, io.EOF) || err.Error() != io.EOF.Error() {
		t.Errorf("SkipRetry(io.EOF) = %v", err)
	}
	if err := queue.RetryAfter(time.Second, io.EOF); !errors.Is(err, io.EOF) || err.Error() != io.EOF.Error() {
		t.Errorf("RetryAfter(io.EOF) = %v", err)
	}
	if queue.SkipRetry(nil) == nil || queue.RetryAfter(time.Second, nil) == nil {
		t.Error("a nil cause must still be an error")
	}
	p := &queue.PanicError{Value: "x"}
	if p.Error() != "panic: x" {
		t.Errorf("PanicError = %q", p.Error())
	}
}
