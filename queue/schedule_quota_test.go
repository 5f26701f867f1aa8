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

// With ScheduleQuota, sets of new schedules from many goroutines leave exactly the quota's number
// of schedules (the check is in the script that names them) and the others get a
// *sluice.QuotaError naming max_schedules and store nothing; a schedule that exists can still be
// replaced, and another namespace is not limited by the quota.
func TestScheduleQuotaHoldsUnderConcurrentSets(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{ScheduleQuota: func(_ context.Context, ns string) (int64, error) {
			if ns == "capped" {
				return 5, nil
			}
			return 0, nil
		}})
		set := func(ns, name, q string) error {
			_, err := f.client.Schedules().Set(ctxT(t), queue.ScheduleParams{Namespace: ns, Name: name, Every: time.Hour,
				Job: queue.JobTemplate{Queue: q}})
			return err
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		refused := 0
		for i := range 20 {
			wg.Go(func() {
				err := set("capped", fmt.Sprintf("s%d", i), fmt.Sprintf("q%d", i))
				var qe *sluice.QuotaError
				switch {
				case errors.As(err, &qe) && qe.Quota == "max_schedules" && qe.Limit == 5 && errors.Is(err, sluice.ErrQuotaExceeded):
					mu.Lock()
					refused++
					mu.Unlock()
				case err != nil:
					t.Errorf("set: %v", err)
				}
			})
		}
		wg.Wait()
		ctx := ctxT(t)
		list, err := f.client.Schedules().List(ctx, "capped", queue.ListSchedulesParams{})
		n, errCount := f.client.Schedules().Count(ctx, "capped")
		if err != nil || errCount != nil || len(list) != 5 || n != 5 || refused != 15 {
			t.Fatalf("%d schedules listed, %d counted (%v, %v), %d refused; want 5, 5 and 15", len(list), n, err, errCount, refused)
		}
		// Replacing one at the quota, on another queue too, is not a new schedule.
		if err := set("capped", list[0].Name, "moved"); err != nil {
			t.Fatalf("replace at the quota: %v", err)
		}
		wantQuota(t, set("capped", "one-more", "q"), "max_schedules", 5)
		if _, err := f.client.Schedules().Get(ctx, "capped", "one-more"); !errors.Is(err, queue.ErrScheduleNotFound) {
			t.Errorf("a refused schedule: %v, want ErrScheduleNotFound", err)
		}
		for i := range 8 {
			if err := set("free", fmt.Sprintf("s%d", i), "q"); err != nil {
				t.Fatalf("another namespace: %v", err)
			}
		}
		// Deleting one makes room for another.
		if err := f.client.Schedules().Delete(ctx, "capped", list[1].Name); err != nil {
			t.Fatal(err)
		}
		if err := set("capped", "one-more", "q"); err != nil {
			t.Fatalf("set after a delete: %v", err)
		}
	})
}

// A namespace at its quota of stored jobs gets no more jobs from its schedules than from its
// publishes: a trigger is refused with the QuotaError, and the ticks a scheduler finds due are
// counted missed instead of published.
func TestSchedulesHoldToTheStorageQuota(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{UsageRefresh: 20 * time.Millisecond,
		StorageQuota: func(context.Context, string) (queue.StorageQuota, error) { return queue.StorageQuota{Jobs: 2}, nil }})
	ctx := ctxT(t)
	f.setSchedule(t, queue.ScheduleParams{Name: "beat", Every: time.Second, Job: queue.JobTemplate{Queue: "beats"}})
	if _, err := f.client.Schedules().Trigger(ctx, f.ns, "beat"); err != nil {
		t.Fatalf("a trigger within the quota: %v", err)
	}
	f.publish(t, queue.PublishParams{Namespace: f.ns, Queue: "other", Payload: []byte("x")})
	_, err := f.client.Schedules().Trigger(ctx, f.ns, "beat")
	wantQuota(t, err, "max_stored_jobs", 2)
	s := f.startScheduler(t, queue.SchedulerConfig{})
	testwait.Until(t, 30*time.Second, "ticks counted missed", func() bool { return f.schedule(t, "beat").Missed >= 2 })
	s.Stop()
	sch := f.schedule(t, "beat")
	if sch.Fires != 1 || f.stats(t, "beats").Ready+f.stats(t, "beats").Delayed != 1 {
		t.Errorf("at the quota: %d fires, %+v in the queue; want the trigger's job only", sch.Fires, f.stats(t, "beats"))
	}
	if st := s.Stats(); st.Missed < 2 || st.Fires != 0 {
		t.Errorf("scheduler stats %+v; want the ticks missed, none fired", st)
	}
}
