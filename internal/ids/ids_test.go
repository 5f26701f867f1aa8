package ids

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// Ids of one Gen are valid and strictly increasing, also many within one millisecond and from
// many goroutines, and they start with the time they were made.
func TestIdsIncreaseAndSortByTime(t *testing.T) {
	t.Parallel()
	var g Gen
	before := encode(uint64(time.Now().UnixMilli())<<16, 0)
	prev := g.Next()
	for range 10_000 {
		id := g.Next()
		if !Valid(id) || id <= prev {
			t.Fatalf("id %q after %q: want a valid, greater id", id, prev)
		}
		prev = id
	}
	if first := g.Next(); first[:10] < before[:10] {
		t.Fatalf("id %q older than the time it was made (%q)", first, before)
	}
	var mu sync.Mutex
	seen := make(map[string]bool)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				id := g.Next()
				mu.Lock()
				if seen[id] {
					t.Errorf("id %q made twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func TestValid(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "01ARZ3NDEKTSV4RRFFQ69G5FA", "01ARZ3NDEKTSV4RRFFQ69G5FAVX", "01ARZ3NDEKTSV4RRFFQ69G5FAU", strings.Repeat("I", 26)} {
		if Valid(s) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
	if s := "01ARZ3NDEKTSV4RRFFQ69G5FAV"; !Valid(s) {
		t.Errorf("Valid(%q) = false", s)
	}
}
