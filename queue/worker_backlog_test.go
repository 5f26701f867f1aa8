package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

func TestBacklogMonitorCheck(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{})
	other, err := queue.NewQueue[task](f.client, "other-ns", "calm", queue.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	log := &testio.Buffer{}
	m, err := queue.NewBacklogMonitor(f.client, queue.BacklogConfig{
		Queues: []queue.BacklogQueue{q.Backlog(3, 1), other.Backlog(100, 0)},
		Logger: logInto(log),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	produceN(t, q, 2)
	if _, err := q.Produce(ctx, &task{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	alerts, err := m.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 1 || alerts[0].Kind != queue.BacklogDepth || alerts[0].Value != 3 || alerts[0].Threshold != 3 ||
		alerts[0].Queue != "q" || alerts[0].Stats.Ready != 2 || alerts[0].Stats.Delayed != 1 {
		t.Fatalf("first check = %+v", alerts)
	}
	// Two jobs die: the dead letter grew by 2 since the first check, and the depth is under 3.
	for _, d := range f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 2}) {
		if _, err := f.client.Nack(ctx, queue.NackParams{Namespace: d.Namespace, Queue: d.Queue, ID: d.ID, Delivery: d.Delivery, NoRetry: true}); err != nil {
			t.Fatal(err)
		}
	}
	alerts, err = m.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 1 || alerts[0].Kind != queue.BacklogDeadGrowth || alerts[0].Value != 2 {
		t.Fatalf("second check = %+v", alerts)
	}
	if alerts, _ = m.Check(ctx); len(alerts) != 0 {
		t.Fatalf("third check (no change) = %+v", alerts)
	}
	out := log.String()
	if strings.Count(out, "over threshold") != 2 || strings.Count(out, "back under threshold") != 2 {
		t.Fatalf("log:\n%s", out)
	}
}

func TestBacklogMonitorStartStop(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	q := newTyped(t, f, queue.QueueConfig{})
	produceN(t, q, 5)
	var mu sync.Mutex
	var got []queue.BacklogAlert
	m, err := queue.NewBacklogMonitor(f.client, queue.BacklogConfig{
		Queues:   []queue.BacklogQueue{q.Backlog(1, 0)},
		Interval: 10 * time.Millisecond,
		Logger:   logInto(&testio.Buffer{}),
		OnAlert: func(_ context.Context, a queue.BacklogAlert) {
			mu.Lock()
			got = append(got, a)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); !errors.Is(err, startstop.ErrAlreadyStarted) {
		t.Fatalf("a second Start = %v, want ErrAlreadyStarted", err)
	}
	testwait.Until(t, time.Minute, "two alerts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	m.Stop()
	m.Stop() // idempotent
	mu.Lock()
	defer mu.Unlock()
	if got[0].Value != 5 || got[0].Kind != queue.BacklogDepth {
		t.Fatalf("alert = %+v", got[0])
	}
}

func TestBacklogMonitorValidates(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	for _, cfg := range []queue.BacklogConfig{
		{},
		{Queues: []queue.BacklogQueue{{Namespace: "ns", Queue: "bad name"}}},
		{Queues: []queue.BacklogQueue{{Namespace: "ns", Queue: "q", Depth: -1}}},
	} {
		if _, err := queue.NewBacklogMonitor(f.client, cfg); err == nil {
			t.Errorf("NewBacklogMonitor(%+v) accepted a bad config", cfg)
		}
	}
}
