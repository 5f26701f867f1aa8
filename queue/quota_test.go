package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
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
