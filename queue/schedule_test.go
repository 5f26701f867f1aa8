package queue_test

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// startScheduler runs a Scheduler on the fixture's client until the test ends.
func (f *fixture) startScheduler(t *testing.T, cfg queue.SchedulerConfig) *queue.Scheduler {
	t.Helper()
	s := queue.NewScheduler(f.client, cfg)
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func (f *fixture) setSchedule(t *testing.T, p queue.ScheduleParams) queue.Schedule {
	t.Helper()
	if p.Namespace == "" {
		p.Namespace = f.ns
	}
	s, err := f.client.Schedules().Set(ctxT(t), p)
	if err != nil {
		t.Fatalf("Schedules().Set: %v", err)
	}
	return s
}

func (f *fixture) schedule(t *testing.T, name string) queue.Schedule {
	t.Helper()
	s, err := f.client.Schedules().Get(ctxT(t), f.ns, name)
	if err != nil {
		t.Fatalf("Schedules().Get(%s): %v", name, err)
	}
	return s
}

// ticksOf consumes every job of queue q once the last tick of schedule sch is due (a scheduler
// publishes ticks ahead, due at them) and returns their schedule_tick attributes, sorted
// (duplicates kept).
func (f *fixture) ticksOf(t *testing.T, q string, sch queue.Schedule) []string {
	t.Helper()
	testwait.Until(t, time.Minute, "the last tick due", func() bool { return time.Now().After(sch.LastRun) })
	var out []string
	for {
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{q}, Count: 1000})
		if len(ds) == 0 {
			sort.Strings(out)
			return out
		}
		for _, d := range ds {
			out = append(out, d.Attributes[queue.AttrScheduleTick])
		}
	}
}

func TestScheduleSetGetListDelete(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	s := f.setSchedule(t, queue.ScheduleParams{Name: "nightly", Cron: "0 2 * * *", Timezone: "Europe/Berlin",
		Job: queue.JobTemplate{Queue: "reports", Payload: []byte(`{"kind":"nightly"}`), Priority: 3}})
	if s.NextRun.IsZero() || s.Version != 1 || s.CatchUp != queue.CatchUpOne {
		t.Fatalf("new schedule = %+v", s)
	}
	if h, m, _ := s.NextRun.In(mustZone(t, "Europe/Berlin")).Clock(); h != 2 || m != 0 {
		t.Errorf("next run %s is not 02:00 in Berlin", s.NextRun)
	}
	f.setSchedule(t, queue.ScheduleParams{Name: "often", Every: time.Minute, Job: queue.JobTemplate{Queue: "other"}})
	list, err := f.client.Schedules().List(ctx, f.ns, queue.ListSchedulesParams{})
	if err != nil || len(list) != 2 || list[0].Name != "nightly" || list[1].Name != "often" {
		t.Fatalf("List = %v, %v", list, err)
	}
	page, err := f.client.Schedules().List(ctx, f.ns, queue.ListSchedulesParams{After: "nightly", Limit: 1})
	if err != nil || len(page) != 1 || page[0].Name != "often" {
		t.Fatalf("List after nightly = %v, %v", page, err)
	}
	// Replacing moves the schedule to another queue and bumps its version.
	s = f.setSchedule(t, queue.ScheduleParams{Name: "nightly", Cron: "0 3 * * *", Job: queue.JobTemplate{Queue: "moved"}})
	if s.Version != 1 || s.Job.Queue != "moved" || s.Cron != "0 3 * * *" {
		t.Errorf("replaced schedule = %+v", s)
	}
	if err := f.client.Schedules().Delete(ctx, f.ns, "nightly"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := f.client.Schedules().Get(ctx, f.ns, "nightly"); !errors.Is(err, queue.ErrScheduleNotFound) {
		t.Errorf("Get after Delete: %v, want ErrScheduleNotFound", err)
	}
	if err := f.client.Schedules().Delete(ctx, f.ns, "nightly"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestScheduleBadInputNamesTheFieldAndStoresNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	good := queue.JobTemplate{Queue: "q"}
	at := time.Now().Add(time.Hour)
	for _, c := range []struct {
		field string
		p     queue.ScheduleParams
	}{
		{"name", queue.ScheduleParams{Name: "bad name", Every: time.Minute, Job: good}},
		{"cron", queue.ScheduleParams{Name: "s", Cron: "61 * * * *", Job: good}},
		{"cron", queue.ScheduleParams{Name: "s", Cron: "@every 1m", Job: good}},
		{"cron", queue.ScheduleParams{Name: "s", Job: good}},
		{"cron", queue.ScheduleParams{Name: "s", Cron: "0 0 30 2 *", Job: good}},
		{"every", queue.ScheduleParams{Name: "s", Every: 500 * time.Millisecond, Job: good}},
		{"every", queue.ScheduleParams{Name: "s", Every: time.Minute, Cron: "* * * * *", Job: good}},
		{"timezone", queue.ScheduleParams{Name: "s", Cron: "* * * * *", Timezone: "Mars/Olympus", Job: good}},
		{"catch_up", queue.ScheduleParams{Name: "s", Every: time.Minute, CatchUp: "most", Job: good}},
		{"jitter", queue.ScheduleParams{Name: "s", Every: time.Minute, Jitter: -time.Second, Job: good}},
		{"end_at", queue.ScheduleParams{Name: "s", Every: time.Minute, StartAt: at, EndAt: at.Add(-time.Minute), Job: good}},
		{"job.queue", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "a:b"}}},
		{"job.priority", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Priority: 256}}},
		{"job.ttl", queue.ScheduleParams{Name: "s", Every: time.Minute, Jitter: time.Minute, Job: queue.JobTemplate{Queue: "q", TTL: time.Second}}},
		{"job.callback.url", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Callback: &queue.Callback{URL: "ftp://x"}}}},
		{"job.attributes", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Attributes: map[string]string{"schedule": "x"}}}},
		{"end_at", queue.ScheduleParams{Name: "s", Every: time.Minute, EndAt: time.Now().Add(-time.Minute), Job: good}},
		{"end_at", queue.ScheduleParams{Name: "s", Cron: "0 0 29 2 *", EndAt: time.Now().Add(time.Hour), Job: good}},
		// Each field of the job template is held to a publish's limits.
		{"job.payload", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Payload: make([]byte, 8<<20+1)}}},
		{"job.tries", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Tries: -1}}},
		{"job.ttl", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", TTL: -time.Second}}},
		{"job.ttr", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", TTR: -time.Second}}},
		{"job.backoff", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Backoff: queue.Backoff{Base: time.Minute, Max: time.Second}}}},
		{"job.unique_key", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", UniqueKey: strings.Repeat("k", queue.MaxUniqueKey+1)}}},
		{"job.unique_for", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", UniqueKey: "k", UniqueFor: -time.Second}}},
		{"job.attributes", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Attributes: manyAttributes(queue.MaxAttributes + 1)}}},
		{"job.attributes", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Attributes: map[string]string{"k": strings.Repeat("v", queue.MaxAttributeValue+1)}}}},
		{"job.callback.timeout", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Callback: &queue.Callback{URL: "https://example.com/x", Timeout: time.Hour}}}},
		{"job.callback.method", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Callback: &queue.Callback{URL: "https://example.com/x", Method: "CONNECT"}}}},
		{"job.callback.headers", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", Callback: &queue.Callback{URL: "https://example.com/x", Header: map[string]string{"X": "a\r\nB: c"}}}}},
		{"job.ttr", queue.ScheduleParams{Name: "s", Every: time.Minute, Job: queue.JobTemplate{Queue: "q", TTR: time.Second, Callback: &queue.Callback{URL: "https://example.com/x", Timeout: time.Second}}}},
	} {
		c.p.Namespace = f.ns
		_, err := f.client.Schedules().Set(ctxT(t), c.p)
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("Set(%+v) = %v, want a field error on %s", c.p, err, c.field)
		}
	}
	list, err := f.client.Schedules().List(ctxT(t), f.ns, queue.ListSchedulesParams{})
	if err != nil || len(list) != 0 {
		t.Errorf("after bad input List = %v, %v; want none", list, err)
	}
}

// manyAttributes returns n distinct attributes.
func manyAttributes(n int) map[string]string {
	a := make(map[string]string, n)
	for i := range n {
		a["k"+strconv.Itoa(i)] = "v"
	}
	return a
}

func TestSchedulePauseResumeTrigger(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	f.setSchedule(t, queue.ScheduleParams{Name: "s", Cron: "0 0 1 1 *", Job: queue.JobTemplate{Queue: "q",
		Payload: []byte("hi"), Attributes: map[string]string{"team": "ops"}}})
	sched := f.client.Schedules()
	p, err := sched.Pause(ctx, f.ns, "s")
	if err != nil || !p.Paused || !p.NextRun.IsZero() {
		t.Fatalf("Pause = %+v, %v", p, err)
	}
	// A trigger publishes the job now, paused or not, and leaves the next run alone.
	tr, err := sched.Trigger(ctx, f.ns, "s")
	if err != nil || tr.JobID == "" {
		t.Fatalf("Trigger = %+v, %v", tr, err)
	}
	d := f.consumeOne(t, "q")
	if d.ID != tr.JobID || string(d.Payload) != "hi" || d.Attributes[queue.AttrSchedule] != "s" ||
		d.Attributes[queue.AttrScheduleTriggered] != "true" || d.Attributes["team"] != "ops" {
		t.Errorf("triggered job = %+v", d)
	}
	got := f.schedule(t, "s")
	if got.Fires != 1 || got.LastJobID != tr.JobID || got.LastRun.IsZero() || !got.Paused {
		t.Errorf("after trigger = %+v", got)
	}
	r, err := sched.Resume(ctx, f.ns, "s")
	if err != nil || r.Paused || r.NextRun.IsZero() || r.NextRun.Month() != time.January {
		t.Errorf("Resume = %+v, %v", r, err)
	}
	for _, call := range []func() error{
		func() error { _, err := sched.Pause(ctx, f.ns, "nope"); return err },
		func() error { _, err := sched.Resume(ctx, f.ns, "nope"); return err },
		func() error { _, err := sched.Trigger(ctx, f.ns, "nope"); return err },
	} {
		if err := call(); !errors.Is(err, queue.ErrScheduleNotFound) {
			t.Errorf("on a missing schedule: %v, want ErrScheduleNotFound", err)
		}
	}
}

func TestPausedScheduleFiresNothingUntilResumed(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	f.setSchedule(t, queue.ScheduleParams{Name: "tick", Every: time.Second, Paused: true, Job: queue.JobTemplate{Queue: "q"}})
	s := f.startScheduler(t, queue.SchedulerConfig{})
	// Two looks at the due index after a tick would have been due fire nothing.
	testwait.Until(t, time.Minute, "passes", func() bool { return s.Stats().Passes >= 3 })
	if n := f.stats(t, "q").Ready; n != 0 {
		t.Fatalf("paused schedule published %d jobs", n)
	}
	if _, err := f.client.Schedules().Resume(ctxT(t), f.ns, "tick"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, time.Minute, "a job after resume", func() bool { return f.stats(t, "q").Ready >= 1 })
}

// Deleting a queue deletes the schedules that publish to it (else the next tick would bring the
// queue back) and leaves the namespace's other schedules alone.
func TestDeletingAQueueDeletesItsSchedules(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		for _, name := range []string{"a1", "a2"} {
			f.setSchedule(t, queue.ScheduleParams{Name: name, Every: time.Hour, Job: queue.JobTemplate{Queue: "a"}})
		}
		f.setSchedule(t, queue.ScheduleParams{Name: "b1", Every: time.Hour, Job: queue.JobTemplate{Queue: "b"}})
		if _, err := f.client.DeleteQueue(ctx, f.ns, "a"); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a1", "a2"} {
			if _, err := f.client.Schedules().Get(ctx, f.ns, name); !errors.Is(err, queue.ErrScheduleNotFound) {
				t.Errorf("schedule %s of the deleted queue: %v, want ErrScheduleNotFound", name, err)
			}
		}
		left, err := f.client.Schedules().List(ctx, f.ns, queue.ListSchedulesParams{})
		if err != nil || len(left) != 1 || left[0].Name != "b1" {
			t.Fatalf("schedules left: %+v, %v; want b1 only", left, err)
		}
	})
}

// Every field of a schedule and of its job comes back from Get and List as it was set.
func TestScheduleKeepsEveryField(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	start := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	p := queue.ScheduleParams{Namespace: f.ns, Name: "full", Cron: "*/10 * * * * *", Timezone: "America/New_York",
		CatchUp: queue.CatchUpAll, Jitter: 2 * time.Second, StartAt: start, EndAt: start.Add(24 * time.Hour), Paused: true,
		Job: queue.JobTemplate{Queue: "q", Payload: []byte(`{"x":1}`), Priority: 9, Tries: 4, TTL: time.Hour, TTR: 40 * time.Second,
			Backoff: queue.Backoff{Base: time.Second, Max: time.Minute}, UniqueKey: "k", UniqueFor: 10 * time.Minute,
			Attributes: map[string]string{"team": "ops"},
			Callback:   &queue.Callback{URL: "https://example.com/hook", Method: http.MethodPut, Header: map[string]string{"X-A": "b"}, Timeout: 20 * time.Second}},
	}
	f.setSchedule(t, p)
	got := f.schedule(t, "full")
	list, err := f.client.Schedules().List(ctx, f.ns, queue.ListSchedulesParams{})
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	for _, s := range []queue.Schedule{got, list[0]} {
		sp, j, want := s.ScheduleParams, s.Job, p.Job
		if sp.Cron != p.Cron || sp.Timezone != p.Timezone || sp.CatchUp != p.CatchUp || sp.Jitter != p.Jitter ||
			!sp.StartAt.Equal(p.StartAt) || !sp.EndAt.Equal(p.EndAt) || !sp.Paused || !s.NextRun.IsZero() ||
			j.Queue != want.Queue || string(j.Payload) != string(want.Payload) || j.Priority != want.Priority ||
			j.Tries != want.Tries || j.TTL != want.TTL || j.TTR != want.TTR || j.Backoff != want.Backoff ||
			j.UniqueKey != want.UniqueKey || j.UniqueFor != want.UniqueFor || j.Attributes["team"] != "ops" ||
			j.Callback == nil || j.Callback.URL != want.Callback.URL || j.Callback.Method != http.MethodPut ||
			j.Callback.Header["X-A"] != "b" || j.Callback.Timeout != want.Callback.Timeout {
			t.Errorf("schedule read back = %+v (job %+v, callback %+v), set %+v", sp, j, j.Callback, p)
		}
	}
}
