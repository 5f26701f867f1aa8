package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// tickWant is how many ticks the exactly-once tests wait for: 20 s of a 1 s schedule for three
// schedulers sharing it, 8 for schedulers stopped between their calls.
const tickWant, tickWantKilled = 20, 8

// checkEveryTickOnce consumes the jobs of the 1 s schedule "beat" (queue "beats") and checks that
// there are at least want, one per tick, none missing between the first and the last, and as many
// as the schedule counts fired, none missed. It returns the schedule.
func (f *fixture) checkEveryTickOnce(t *testing.T, want int) queue.Schedule {
	t.Helper()
	sch := f.schedule(t, "beat")
	ticks := f.ticksOf(t, "beats", sch)
	if int64(len(ticks)) != sch.Fires || sch.Missed != 0 {
		t.Errorf("%d jobs; schedule says fires %d, missed %d", len(ticks), sch.Fires, sch.Missed)
	}
	if len(ticks) < want {
		t.Fatalf("%d ticks fired, want at least %d", len(ticks), want)
	}
	for i := 1; i < len(ticks); i++ {
		a, errA := time.Parse(time.RFC3339, ticks[i-1])
		b, errB := time.Parse(time.RFC3339, ticks[i])
		if errA != nil || errB != nil {
			t.Fatalf("bad tick attributes %q, %q", ticks[i-1], ticks[i])
		}
		switch d := b.Sub(a); {
		case d == 0:
			t.Errorf("tick %s fired twice", ticks[i])
		case d != time.Second:
			t.Errorf("ticks missing between %s and %s", ticks[i-1], ticks[i])
		}
	}
	return sch
}

// Three schedulers share one schedule firing every second: every tick enqueues exactly one job,
// none is skipped, and the schedule's counters agree.
func TestThreeSchedulersFireEachTickOnce(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		f.setSchedule(t, queue.ScheduleParams{Name: "beat", Every: time.Second, Job: queue.JobTemplate{Queue: "beats"}})
		schedulers := make([]*queue.Scheduler, 3)
		for i := range schedulers {
			schedulers[i] = f.startScheduler(t, queue.SchedulerConfig{})
		}
		testwait.Until(t, 90*time.Second, "ticks", func() bool { return f.schedule(t, "beat").Fires >= tickWant })
		for _, s := range schedulers {
			s.Stop()
		}
		sch := f.checkEveryTickOnce(t, tickWant)
		var total int64
		for _, s := range schedulers {
			total += s.Stats().Fires
		}
		if total != sch.Fires {
			t.Errorf("schedulers counted %d fires, the schedule %d", total, sch.Fires)
		}
	})
}

// Schedulers stopped between their script calls (after claiming, after reading the due schedules,
// after firing) and replaced by new ones lose and duplicate no tick.
func TestSchedulerKilledMidTickLosesAndDuplicatesNothing(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		f.setSchedule(t, queue.ScheduleParams{Name: "beat", Every: time.Second, CatchUp: queue.CatchUpSkip,
			Job: queue.JobTemplate{Queue: "beats"}})
		// Each scheduler stops at the first time it reaches its step; the steps take turns.
		steps := []string{"claim", "due", "fire"}
		var mu sync.Mutex
		kills := map[string]int{}
		started := 0
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for ctx.Err() == nil {
					runCtx, kill := context.WithCancel(ctx)
					mu.Lock()
					at := steps[started%len(steps)]
					started++
					mu.Unlock()
					s := queue.NewScheduler(f.client, queue.SchedulerConfig{ClaimLease: 300 * time.Millisecond})
					queue.StopSchedulerBetween(s, func(_ context.Context, step string) {
						if step == at {
							mu.Lock()
							kills[step]++
							mu.Unlock()
							kill()
						}
					})
					if err := s.Start(runCtx); err != nil {
						t.Errorf("Start: %v", err)
						kill()
						return
					}
					<-runCtx.Done()
					s.Stop()
				}
			})
		}
		testwait.Until(t, 90*time.Second, "ticks", func() bool { return f.schedule(t, "beat").Fires >= tickWantKilled })
		cancel()
		wg.Wait()
		mu.Lock()
		t.Logf("stopped between calls: %v", kills)
		if kills["fire"] == 0 || kills["due"] == 0 {
			t.Errorf("no scheduler was stopped after a fire or before one: %v", kills)
		}
		mu.Unlock()
		f.checkEveryTickOnce(t, tickWantKilled)
	})
}

// After an outage (the next run set far in the past), each catch-up policy fires what it says and
// counts the rest missed; every tick is accounted for once.
func TestCatchUpPoliciesAfterAnOutage(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		for _, c := range []struct {
			policy        queue.CatchUp
			fired, missed int64
		}{
			{queue.CatchUpSkip, 0, 11},
			{queue.CatchUpOne, 1, 10},
			{queue.CatchUpAll, 11, 0},
		} {
			t.Run(string(c.policy), func(t *testing.T) {
				f := setup(t, env, queue.Config{})
				f.ns = "outage-" + string(c.policy)
				ctx := ctxT(t)
				// Hourly ticks from 10.5 hours ago: eleven were missed by the outage, the next one is
				// half an hour from now.
				start := time.Now().Add(-10*time.Hour - 30*time.Minute).Truncate(time.Millisecond)
				f.setSchedule(t, queue.ScheduleParams{Name: "hourly", Every: time.Hour, CatchUp: c.policy,
					StartAt: start, Job: queue.JobTemplate{Queue: "q"}})
				if err := queue.BackdateSchedule(ctx, f.client, f.ns, "hourly", start); err != nil {
					t.Fatal(err)
				}
				s := queue.NewScheduler(f.client, queue.SchedulerConfig{Grace: 30 * time.Second})
				testwait.UntilNil(t, time.Minute, func() error { _, err := s.RunOnce(ctx); return err })
				sch := f.schedule(t, "hourly")
				ticks := f.ticksOf(t, "q", sch)
				if int64(len(ticks)) != c.fired || sch.Fires != c.fired || sch.Missed != c.missed {
					t.Errorf("%d jobs, fires %d, missed %d; want %d, %d, %d", len(ticks), sch.Fires, sch.Missed,
						c.fired, c.fired, c.missed)
				}
				if want := start.Add(11 * time.Hour); !sch.NextRun.Equal(want) {
					t.Errorf("next run %s, want %s", sch.NextRun, want)
				}
				if c.policy == queue.CatchUpOne && len(ticks) == 1 {
					if want := start.Add(10 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z07:00"); ticks[0] != want {
						t.Errorf("one fired tick %s, want the newest %s", ticks[0], want)
					}
				}
			})
		}
	})
}

// A schedule whose job has a callback publishes callback jobs: the callback deliverer's lane gets
// them, not the consumers.
func TestScheduleWithACallbackPublishesCallbackJobs(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	f.setSchedule(t, queue.ScheduleParams{Name: "hook", Every: time.Second, Job: queue.JobTemplate{Queue: "hooks",
		Payload: []byte(`{"ping":1}`), Callback: &queue.Callback{URL: "https://example.com/hook"}}})
	f.startScheduler(t, queue.SchedulerConfig{})
	var batch queue.CallbackBatch
	testwait.UntilNil(t, time.Minute, func() error {
		var err error
		batch, err = f.client.ConsumeCallbacks(ctxT(t), f.ns, "hooks", 10)
		if err == nil && len(batch.Jobs) == 0 {
			return errNoJobs
		}
		return err
	})
	j := batch.Jobs[0]
	if j.Callback.URL != "https://example.com/hook" || string(j.Payload) != `{"ping":1}` ||
		j.Attributes[queue.AttrSchedule] != "hook" {
		t.Errorf("callback job = %+v", j)
	}
	if n := f.stats(t, "hooks").Ready; n != 0 {
		t.Errorf("%d callback jobs handed to consumers", n)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

const errNoJobs = errString("no jobs yet")

// A typed queue's schedule publishes its payload encoded by the queue's codec, and the queue's
// workers get the ticks' jobs.
func TestTypedQueueSchedule(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	type report struct{ Kind string }
	reports, err := queue.NewQueue[report](f.client, f.ns, "reports", queue.QueueConfig{Tries: 7})
	if err != nil {
		t.Fatal(err)
	}
	s, err := reports.Schedule(ctxT(t), "weekly", queue.ScheduleParams{Cron: "@weekly"}, report{Kind: "weekly"})
	if err != nil || s.Job.Queue != "reports" || s.Job.Tries != 7 || string(s.Job.Payload) != `{"Kind":"weekly"}` {
		t.Fatalf("Schedule = %+v, %v", s, err)
	}
	if _, err := f.client.Schedules().Trigger(ctxT(t), f.ns, "weekly"); err != nil {
		t.Fatal(err)
	}
	d := f.consumeOne(t, "reports")
	if string(d.Payload) != `{"Kind":"weekly"}` || d.RemainingTries != 6 || d.Attributes[queue.AttrSchedule] != "weekly" {
		t.Errorf("scheduled job = %+v", d)
	}
}

// A tick within the lookahead is published ahead, as a delayed job due at the tick: consumers get
// it at its tick, not before, and its ttl counts from the tick (a ttl shorter than the lead still
// delivers it). With no lookahead, nothing is published before the tick.
func TestTicksArePublishedAheadDueAtTheirTick(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		tick := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
		f.setSchedule(t, queue.ScheduleParams{Name: "soon", Every: time.Hour, StartAt: tick,
			Job: queue.JobTemplate{Queue: "soon", TTL: time.Second}})

		if _, err := queue.NewScheduler(f.client, queue.SchedulerConfig{Lookahead: -1}).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if sch := f.schedule(t, "soon"); sch.Fires != 0 {
			t.Fatalf("no lookahead: %d fires before the tick", sch.Fires)
		}

		if _, err := queue.NewScheduler(f.client, queue.SchedulerConfig{Lookahead: 5 * time.Second}).RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		sch := f.schedule(t, "soon")
		if sch.Fires != 1 || !sch.LastRun.Equal(tick) || !sch.NextRun.Equal(tick.Add(time.Hour)) {
			t.Fatalf("after a look ahead: fires %d, last run %s, next run %s; want 1, %s, %s",
				sch.Fires, sch.LastRun, sch.NextRun, tick, tick.Add(time.Hour))
		}
		if st := f.stats(t, "soon"); st.Delayed != 1 || st.Ready != 0 {
			t.Fatalf("the tick's job: %d delayed, %d ready; want it delayed", st.Delayed, st.Ready)
		}
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"soon"}, Timeout: 10 * time.Second})
		got := time.Now()
		if len(ds) != 1 {
			t.Fatalf("consumed %d jobs, want the tick's job (ttl 1s, published 2s ahead)", len(ds))
		}
		if got.Before(tick) {
			t.Errorf("the job was delivered at %s, before its tick %s", got, tick)
		}
		if want := tick.UTC().Format("2006-01-02T15:04:05.000Z07:00"); ds[0].Attributes[queue.AttrScheduleTick] != want {
			t.Errorf("tick attribute %q, want %q", ds[0].Attributes[queue.AttrScheduleTick], want)
		}
	})
}
