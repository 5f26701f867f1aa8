package outbound_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

func TestBackoffDoublesWithJitterUpToMax(t *testing.T) {
	t.Parallel()
	base, maxDelay := 100*time.Millisecond, 2*time.Second
	for attempt, want := range map[int]time.Duration{
		0: base, 1: base, 2: 2 * base, 3: 4 * base, 5: 16 * base, 6: maxDelay, 100: maxDelay,
	} {
		for range 50 {
			got := outbound.Backoff(attempt, base, maxDelay)
			if got > want || got < want*8/10 {
				t.Fatalf("Backoff(%d) = %v, want in [%v, %v]", attempt, got, want*8/10, want)
			}
		}
	}
	if got := outbound.Backoff(1, 0, 0); got > time.Second || got < 800*time.Millisecond {
		t.Fatalf("default base: %v", got)
	}
}
