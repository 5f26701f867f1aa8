package combine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// blockingRun records batches; the first batch waits until release is closed, so the calls made
// meanwhile must queue up and be merged into the next batch.
type blockingRun struct {
	mu      sync.Mutex
	batches [][]int
	release chan struct{}
	entered chan struct{}
}

func (b *blockingRun) run(ctx context.Context, _ string, reqs []int) ([]int, error) {
	b.mu.Lock()
	b.batches = append(b.batches, append([]int(nil), reqs...))
	first := len(b.batches) == 1
	b.mu.Unlock()
	if first {
		close(b.entered)
		<-b.release
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out := make([]int, len(reqs))
	for i, r := range reqs {
		out[i] = r * 10
	}
	return out, nil
}

func TestCombinerMergesWaitingCalls(t *testing.T) {
	t.Parallel()
	b := &blockingRun{release: make(chan struct{}), entered: make(chan struct{})}
	c := New(b.run)
	// The leader's context is cancelled while its batch runs: the batch (and the merged calls after
	// it) must still complete for everyone.
	leaderCtx, cancel := context.WithCancel(context.Background())
	results := make(chan [2]int, 10)
	go func() {
		r, err := c.Do(leaderCtx, "q", 1)
		if err != nil {
			t.Errorf("leader: %v", err)
		}
		results <- [2]int{1, r}
	}()
	<-b.entered
	var wg sync.WaitGroup
	for i := 2; i <= 6; i++ {
		wg.Go(func() {
			r, err := c.Do(context.Background(), "q", i)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			results <- [2]int{i, r}
		})
	}
	// Wait until all five are queued behind the running batch.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		n := len(c.groups["q"].waiting)
		c.mu.Unlock()
		if n == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d calls queued", n)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	close(b.release)
	wg.Wait()
	for range 6 {
		r := <-results
		if r[1] != r[0]*10 {
			t.Fatalf("call %d got %d, want its own result %d", r[0], r[1], r[0]*10)
		}
	}
	if len(b.batches) != 2 || len(b.batches[0]) != 1 || len(b.batches[1]) != 5 {
		t.Fatalf("batches = %v, want [[1] [five merged calls]]", b.batches)
	}
	if len(c.groups) != 0 {
		t.Fatalf("groups left behind: %v", c.groups)
	}
}

func TestCombinerSharesAnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	c := New(func(context.Context, string, []int) ([]int, error) { return nil, boom })
	if _, err := c.Do(context.Background(), "q", 1); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}

func TestCombinerKeysAreIndependent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	c := New(func(_ context.Context, key string, reqs []int) ([]int, error) {
		mu.Lock()
		seen[key] += len(reqs)
		mu.Unlock()
		return make([]int, len(reqs)), nil
	})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			if _, err := c.Do(context.Background(), []string{"a", "b"}[i%2], i); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if seen["a"] != 100 || seen["b"] != 100 {
		t.Fatalf("calls per key = %v, want 100 each", seen)
	}
}

func TestCombinerCallerWithdrawsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	b := &blockingRun{release: make(chan struct{}), entered: make(chan struct{})}
	c := New(b.run)
	go func() {
		if _, err := c.Do(context.Background(), "q", 1); err != nil {
			t.Errorf("leader: %v", err)
		}
	}()
	<-b.entered
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, "q", 2)
		gone <- err
	}()
	stays := make(chan int, 1)
	go func() {
		r, _ := c.Do(context.Background(), "q", 3)
		stays <- r
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		n := len(c.groups["q"].waiting)
		c.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("calls did not queue")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn call = %v, want context.Canceled", err)
	}
	close(b.release)
	if r := <-stays; r != 30 {
		t.Fatalf("the call behind the withdrawn one got %d, want 30", r)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.batches) != 2 || len(b.batches[1]) != 1 || b.batches[1][0] != 3 {
		t.Fatalf("batches = %v: the withdrawn request must not run", b.batches)
	}
}
