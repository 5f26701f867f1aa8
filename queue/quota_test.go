package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// With QueueQuota, publishes from many goroutines to new queues of a namespace add exactly the
// quota's number of queues (the check is in the registering script) and the others get a
// *sluice.QuotaError; another namespace is not limited by it.
func TestQueueQuotaHoldsUnderConcurrentPublishes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{QueueQuota: func(_ context.Context, ns string) (int64, error) {
			if ns == "capped" {
				return 10, nil
			}
			return 0, nil
		}})
		var wg sync.WaitGroup
		var mu sync.Mutex
		refused := 0
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.client.Publish(ctxT(t), queue.PublishParams{Namespace: "capped", Queue: fmt.Sprintf("q%d", i), Payload: []byte("x")})
				var qe *sluice.QuotaError
				switch {
				case errors.As(err, &qe) && qe.Quota == "max_queues" && qe.Limit == 10 && errors.Is(err, sluice.ErrQuotaExceeded):
					mu.Lock()
					refused++
					mu.Unlock()
				case err != nil:
					t.Errorf("publish: %v", err)
				}
			}()
		}
		wg.Wait()
		n, err := f.client.QueueCount(ctxT(t), "capped")
		if err != nil || n != 10 || refused != 30 {
			t.Fatalf("%d queues (%v), %d refused; want 10 and 30", n, err, refused)
		}
		for i := range 20 {
			f.publish(t, queue.PublishParams{Namespace: "free", Queue: fmt.Sprintf("q%d", i), Payload: []byte("x")})
		}
	})
}

// With StorageQuota, a namespace at its quota of stored jobs gets a *sluice.QuotaError naming
// max_stored_jobs, whichever of its queues it publishes to; another namespace is not limited by
// it; another client measures what the namespace stores; and once jobs leave, the next measure
// lets publishes in again.
func TestStoredJobsQuota(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		quota := func(_ context.Context, ns string) (queue.StorageQuota, error) {
			if ns == "capped" {
				return queue.StorageQuota{Jobs: 5}, nil
			}
			return queue.StorageQuota{}, nil
		}
		f := setup(t, env, queue.Config{StorageQuota: quota, UsageRefresh: 20 * time.Millisecond})
		for i := range 5 {
			f.publish(t, queue.PublishParams{Namespace: "capped", Queue: fmt.Sprintf("q%d", i%3), Payload: []byte("x")})
		}
		_, err := f.client.Publish(ctxT(t), queue.PublishParams{Namespace: "capped", Queue: "q9", Payload: []byte("x")})
		wantQuota(t, err, "max_stored_jobs", 5)
		_, err = f.client.PublishMany(ctxT(t), []queue.PublishParams{{Namespace: "capped", Queue: "q0", Payload: []byte("x")}})
		wantQuota(t, err, "max_stored_jobs", 5)
		for i := range 20 {
			f.publish(t, queue.PublishParams{Namespace: "free", Queue: "q", Payload: []byte(fmt.Sprint(i))})
		}
		other := setup(t, env, queue.Config{})
		if u, err := other.client.Usage(ctxT(t), "capped"); err != nil || u.Jobs != 5 || u.Bytes <= 0 {
			t.Fatalf("capped's usage measured by another client: %+v, %v", u, err)
		}
		if n, err := f.client.Purge(ctxT(t), "capped", "q0"); err != nil || n != 2 {
			t.Fatalf("purge: %d, %v", n, err)
		}
		testwait.Until(t, 30*time.Second, "a publish let in after the purge", func() bool {
			_, err := f.client.Publish(ctxT(t), queue.PublishParams{Namespace: "capped", Queue: "q0", Payload: []byte("y")})
			return err == nil
		})
	})
}

// A namespace filling its quota of stored bytes with large jobs is refused with max_stored_bytes
// near the quota: what Redis then holds for it is the quota, give or take one measure's worth.
func TestStoredBytesQuota(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	const quota = 256 << 10
	f := setup(t, env, queue.Config{UsageRefresh: 10 * time.Millisecond, StorageQuota: func(context.Context, string) (queue.StorageQuota, error) {
		return queue.StorageQuota{Bytes: quota}, nil
	}})
	payload := make([]byte, 8<<10)
	published := 0
	for {
		_, err := f.client.Publish(ctxT(t), queue.PublishParams{Namespace: "big", Queue: "q", Payload: payload})
		if err != nil {
			wantQuota(t, err, "max_stored_bytes", quota)
			break
		}
		if published++; published > 100 {
			t.Fatal("100 jobs of 8 KiB published under a quota of 256 KiB")
		}
	}
	u, err := setup(t, env, queue.Config{}).client.Usage(ctxT(t), "big")
	if err != nil || u.Bytes < quota/2 || u.Bytes > quota+64<<10 {
		t.Fatalf("after %d jobs refused: %+v, %v; want about %d bytes", published, u, err, quota)
	}
}

func wantQuota(t *testing.T, err error, name string, limit int64) {
	t.Helper()
	var qe *sluice.QuotaError
	if !errors.As(err, &qe) || qe.Quota != name || qe.Limit != limit || !errors.Is(err, sluice.ErrQuotaExceeded) {
		t.Fatalf("want a QuotaError %s (%d), got %v", name, limit, err)
	}
}
