package queue_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// TestSentinelFailover publishes and consumes through a redis+sentinel:// URL while the primary is
// SIGKILLed. The client must follow the new primary without a restart; a producer whose publishes
// wait for a replica (ReplicaAcks 1) must lose nothing it was told was published; what a producer
// that does not wait loses in the window is logged (docs/reliability.md).
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	set := redistest.StartSentinel(t)
	rdb, err := redisx.NewClient(set.URL())
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	newClient := func(cfg queue.Config) *queue.Client {
		cfg.Prefix = "failover"
		c, err := queue.NewClient(rdb, cfg)
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	plain := newClient(queue.Config{})
	acked := newClient(queue.Config{ReplicaAcks: 1, ReplicaAckTimeout: 500 * time.Millisecond})
	consumer := newClient(queue.Config{})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu        sync.Mutex
		published = map[string]map[string]bool{"plain": {}, "acked": {}} // acknowledged publishes
		seen      = map[string]int{}                                     // payload → deliveries
		failedAt  atomic.Int64                                           // unix ms of the kill
		afterKill atomic.Int64                                           // plain publishes acknowledged after it
		resumedAt atomic.Int64                                           // unix ms of the first of them
		notRepl   atomic.Int64                                           // acked publishes refused with ErrNotReplicated
	)
	stopProducers := make(chan struct{})
	var producers sync.WaitGroup
	produce := func(c *queue.Client, q string) {
		defer producers.Done()
		for i := 0; ; i++ {
			select {
			case <-stopProducers:
				return
			default:
			}
			payload := q + "-" + strconv.Itoa(i)
			_, err := c.Publish(ctx, queue.PublishParams{Namespace: "ns", Queue: q, Payload: []byte(payload)})
			switch {
			case err == nil:
				mu.Lock()
				published[q][payload] = true
				mu.Unlock()
				if q == "plain" && failedAt.Load() != 0 && afterKill.Add(1) == 1 {
					resumedAt.Store(time.Now().UnixMilli())
				}
			case errors.Is(err, queue.ErrNotReplicated):
				notRepl.Add(1)
			default:
				time.Sleep(10 * time.Millisecond) // the primary is gone; the client is looking for the next
			}
		}
	}
	producers.Add(2)
	go produce(plain, "plain")
	go produce(acked, "acked")

	stopConsumer := make(chan struct{})
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for {
			select {
			case <-stopConsumer:
				return
			default:
			}
			ds, err := consumer.Consume(ctx, queue.ConsumeParams{Namespace: "ns", Queues: []string{"acked", "plain"},
				Count: 50, TTR: 2 * time.Second, Timeout: 100 * time.Millisecond})
			if err != nil {
				time.Sleep(10 * time.Millisecond) // the consumer's pace while the client finds the new primary
				continue
			}
			for _, d := range ds {
				mu.Lock()
				seen[string(d.Payload)]++
				mu.Unlock()
				_ = consumer.Ack(ctx, queue.AckParams{Namespace: d.Namespace, Queue: d.Queue, ID: d.ID, Delivery: d.Delivery})
			}
		}
	}()

	count := func(q string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(published[q])
	}
	testwait.Until(t, time.Minute, "publishes before the kill", func() bool { return count("plain") >= 200 && count("acked") >= 50 })
	old, err := set.KillPrimary(ctx)
	if err != nil {
		t.Fatalf("kill primary: %v", err)
	}
	killed := time.Now()
	failedAt.Store(killed.UnixMilli())
	now, err := set.WaitFailover(ctx, old)
	if err != nil {
		t.Fatalf("%v", err)
	}
	testwait.Until(t, time.Minute, "publishes on the new primary", func() bool { return afterKill.Load() >= 100 })
	t.Logf("primary %s killed; sentinels promoted %s; the first publish succeeded %dms after the kill",
		old, now, resumedAt.Load()-killed.UnixMilli())
	close(stopProducers)
	producers.Wait()

	// Drain: every queue empty (nothing ready, delayed or leased) means everything that survived has
	// been delivered.
	testwait.Until(t, time.Minute, "queues drained", func() bool {
		for _, q := range []string{"plain", "acked"} {
			s, err := consumer.Stats(ctx, "ns", q)
			if err != nil || s.Ready+s.Delayed+s.Leased > 0 {
				return false
			}
		}
		return true
	})
	close(stopConsumer)
	<-consumerDone

	mu.Lock()
	defer mu.Unlock()
	lost := map[string]int{}
	dups := 0
	for q, ps := range published {
		for p := range ps {
			if seen[p] == 0 {
				lost[q]++
			}
		}
	}
	for _, n := range seen {
		if n > 1 {
			dups += n - 1
		}
	}
	t.Logf("plain: %d acknowledged, %d lost; acked (ReplicaAcks 1): %d acknowledged, %d lost, %d refused with ErrNotReplicated (no replica left after the failover); %d duplicate deliveries",
		len(published["plain"]), lost["plain"], len(published["acked"]), lost["acked"], notRepl.Load(), dups)
	if lost["acked"] > 0 {
		t.Fatalf("%d jobs acknowledged by a replica were lost in the failover", lost["acked"])
	}
}
