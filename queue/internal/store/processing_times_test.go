package store

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// TestAcksCountProcessingTimes seeds leases that started a minute and three seconds ago (and one
// written in the form before starts were kept), acks them through both ack scripts (with a result
// and without), and reads each processing time back from the stats in its bucket; the old-form
// lease is acked but not counted.
func TestAcksCountProcessingTimes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s, ctx := newTestStore(t, env)
		jobs := []*NewJob{newJob("minute"), newJob("seconds"), newJob("old-form")}
		publish(t, ctx, s, "ns", "q", jobs...)
		leased, err := s.Consume(ctx, "ns", "q", 3, 0)
		if err != nil || len(leased.Jobs) != 3 {
			t.Fatalf("Consume: %d jobs, %v", len(leased.Jobs), err)
		}
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		lease := s.keys.get("ns", "q").lease()
		started := func(ago time.Duration) string {
			return "-1:" + strconv.FormatInt(now.Add(-ago).UnixMilli(), 10) // the jobs have unique keys
		}
		env.Client.HSet(ctx, lease, jobs[0].ID, started(time.Minute), jobs[1].ID, started(3*time.Second), jobs[2].ID, "-1")
		outs, err := s.Ack(ctx, []Ack{
			{Namespace: "ns", Queue: "q", ID: jobs[0].ID, Delivery: 1},
			{Namespace: "ns", Queue: "q", ID: jobs[1].ID, Delivery: 1, Result: []byte("kept")},
			{Namespace: "ns", Queue: "q", ID: jobs[2].ID, Delivery: 1},
		})
		if err != nil || len(outs) != 3 || outs[0] != 1 || outs[1] != 1 || outs[2] != 1 {
			t.Fatalf("Ack: %v, %v; want three acked", outs, err)
		}
		st, err := s.Stats(ctx, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		// A minute (and the few ms the test took) is in bucket 63, [2^15.75, 2^16) ms; three
		// seconds in bucket 46, [2^11.5, 2^11.75) ms.
		want := map[int]int64{63: 1, 46: 1}
		if len(st.ProcessingTimes) != 2 || st.ProcessingTimes[63] != 1 || st.ProcessingTimes[46] != 1 {
			t.Errorf("processing times %v, want %v", st.ProcessingTimes, want)
		}
		if st.Acked != 3 {
			t.Errorf("acked %d, want 3", st.Acked)
		}
	})
}

// TestStatsTellTheOldestReadyJobsAge publishes a job, then, once it has waited, a job of a higher
// priority and one with a callback: the oldest ready job's age is the first one's wait, and once
// consumers took every job it is 0.
func TestStatsTellTheOldestReadyJobsAge(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s, ctx := newTestStore(t, env)
		before := time.Now()
		publish(t, ctx, s, "ns", "q", newJob("first"))
		published := time.Now()
		testwait.Until(t, time.Minute, "the first job to wait 300 ms", func() bool { return time.Since(published) > 300*time.Millisecond })
		second := newJob("urgent")
		second.Priority = 5
		publish(t, ctx, s, "ns", "q", second)
		st, err := s.Stats(ctx, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		// The first job was published between before and published, and its stamp is never
		// ahead of Redis's clock nor behind it by more than a round trip (clock.go).
		age := time.Duration(st.OldestReadyMs) * time.Millisecond
		if most := time.Since(before) + 30*time.Millisecond; age < 300*time.Millisecond || age > most {
			t.Errorf("oldest ready job's age %v, want the first job's wait (300 ms to %v)", age, most)
		}
		if _, err := s.Consume(ctx, "ns", "q", 2, 0); err != nil {
			t.Fatal(err)
		}
		if st, err = s.Stats(ctx, "ns", "q"); err != nil || st.OldestReadyMs != 0 {
			t.Errorf("oldest ready job's age with none ready: %d ms, %v; want 0", st.OldestReadyMs, err)
		}
	})
}
