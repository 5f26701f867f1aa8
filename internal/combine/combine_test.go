package combine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
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
	testwait.Until(t, time.Minute, "five calls to queue behind the running batch", func() bool { return c.waiting("q") == 5 })
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
	testwait.Until(t, time.Minute, "two calls to queue", func() bool { return c.waiting("q") == 2 })
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

// A lone caller runs its call alone and at once, with the same answer and error it would get in a
// merged batch, and without the hand-over's channels and waiting list.
func TestCombinerLoneCaller(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	run := func(_ context.Context, _ string, reqs []int) ([]int, error) {
		out := make([]int, len(reqs))
		for i, r := range reqs {
			if r < 0 {
				return nil, boom
			}
			out[i] = r * 10
		}
		return out, nil
	}
	c := New(run)
	if r, err := c.Do(context.Background(), "q", 7); r != 70 || err != nil {
		t.Fatalf("lone call = %d, %v; want 70, nil", r, err)
	}
	if r, err := c.Do(context.Background(), "q", -1); r != 0 || !errors.Is(err, boom) {
		t.Fatalf("lone failing call = %d, %v; want 0, boom", r, err)
	}
	if len(c.groups) != 0 {
		t.Fatalf("groups left behind: %v", c.groups)
	}
}

// A lone call allocates run's own result slice, the one-request batch, the group and the detached
// context: nothing of the hand-over (call, channels). Not parallel: AllocsPerRun counts every
// goroutine's allocations.
func TestCombinerLoneCallerAllocations(t *testing.T) {
	c := New(func(_ context.Context, _ string, reqs []int) ([]int, error) { return make([]int, len(reqs)), nil })
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Do(context.Background(), "q", 1); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Fatalf("a lone call made %.0f allocations, want at most 4", allocs)
	}
}

// A call that comes while a lone call runs waits, then leads the next batch with what queued.
func TestCombinerCallsBehindALoneCallRunNext(t *testing.T) {
	t.Parallel()
	b := &blockingRun{release: make(chan struct{}), entered: make(chan struct{})}
	c := New(b.run)
	first := make(chan int, 1)
	go func() {
		r, _ := c.Do(context.Background(), "q", 1)
		first <- r
	}()
	<-b.entered
	second := make(chan int, 1)
	go func() {
		r, _ := c.Do(context.Background(), "q", 2)
		second <- r
	}()
	testwait.Until(t, time.Minute, "the second call to queue", func() bool { return c.waiting("q") == 1 })
	close(b.release)
	if r1, r2 := <-first, <-second; r1 != 10 || r2 != 20 {
		t.Fatalf("answers %d and %d, want 10 and 20", r1, r2)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.groups) != 0 {
		t.Fatalf("groups left behind: %v", c.groups)
	}
}

// waiting is the number of calls on key waiting for a batch.
func (c *Combiner[Req, Res]) waiting(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[key]; g != nil {
		return len(g.waiting)
	}
	return 0
}
