//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// TestSchedulersKilled runs a schedule firing every second (catch_up all) on three `sluice server`
// instances for SLUICE_CHAOS_SECONDS while one of them is SIGKILLed (and started again) every
// 1-3s, sometimes two at once. Every tick from the first to the last must have published exactly
// one job: no duplicate, no gap, nothing counted missed.
func TestSchedulersKilled(t *testing.T) {
	bin := buildSluice(t)
	srv := redistest.StartServer(t, "appendfsync everysec")
	r := newRig(t, "schedules", srv.URL())
	instances := []*instance{startInstance(t, bin, srv.URL()), startInstance(t, bin, srv.URL()), startInstance(t, bin, srv.URL())}
	ctx := context.Background()
	sched := r.client.Schedules()
	if _, err := sched.Set(ctx, queue.ScheduleParams{Namespace: r.spec.NS, Name: "beat", Every: time.Second,
		CatchUp: queue.CatchUpAll, Job: queue.JobTemplate{Queue: r.spec.Queue, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	worst := r.killFor(loadDuration(), func() time.Duration { return jitter(time.Second, 3*time.Second) }, func() func() {
		i := rand.IntN(len(instances))
		down := []*instance{instances[i]}
		if rand.IntN(4) == 0 { // now and then two at once
			down = append(down, instances[(i+1+rand.IntN(len(instances)-1))%len(instances)])
		}
		for _, in := range down {
			in.kill()
		}
		return func() {
			time.Sleep(jitter(200*time.Millisecond, 2*time.Second)) // down a while, as after a crash
			for _, in := range down {
				in.start(t)
			}
		}
	})
	// Ticks fire in order: once a tick after now fired, every earlier one has.
	end := time.Now()
	testwait.Until(t, time.Minute, "a tick after the load ended", func() bool {
		s, err := sched.Get(ctx, r.spec.NS, "beat")
		return err == nil && s.LastRun.After(end)
	})
	s, err := sched.Pause(ctx, r.spec.NS, "beat")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(s.LastRun)) // the last tick's job was published ahead, due at its tick
	ticks, lateness := scheduledTicks(t, r)
	dups, gaps := 0, 0
	for i := 1; i < len(ticks); i++ {
		switch d := ticks[i].Sub(ticks[i-1]); {
		case d == 0:
			dups++
		case d != time.Second:
			gaps += int(d/time.Second) - 1
		}
	}
	slices.Sort(lateness)
	p := func(q float64) time.Duration {
		return lateness[int(q*float64(len(lateness)-1))].Round(time.Millisecond)
	}
	fmt.Printf("schedules: %d ticks over %s, %d kills (kill to ready again at most %s): %d duplicates, %d missing, "+
		"%d counted missed; lateness p50 %s, p99 %s, max %s\n", len(ticks), ticks[len(ticks)-1].Sub(ticks[0]),
		len(r.kills), worst.Round(time.Millisecond), dups, gaps, s.Missed, p(0.5), p(0.99), p(1))
	if dups > 0 || gaps > 0 || s.Missed > 0 || int64(len(ticks)) != s.Fires {
		t.Errorf("schedules: %d duplicates, %d missing, %d missed; %d jobs for %d fires", dups, gaps, s.Missed, len(ticks), s.Fires)
	}
}

// scheduledTicks drains the rig's queue and returns the ticks of its jobs in order, and how long
// after its tick each was due (by Redis's clock: published then, or ahead and due at the tick).
func scheduledTicks(t *testing.T, r *rig) (ticks []time.Time, lateness []time.Duration) {
	t.Helper()
	ctx := context.Background()
	for {
		ds, err := r.client.Consume(ctx, queue.ConsumeParams{Namespace: r.spec.NS, Queues: []string{r.spec.Queue}, Count: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			slices.SortFunc(ticks, time.Time.Compare)
			return ticks, lateness
		}
		for _, d := range ds {
			tick, err := time.Parse(time.RFC3339, d.Attributes[queue.AttrScheduleTick])
			if err != nil {
				t.Fatalf("job %s: tick %q: %v", d.ID, d.Attributes[queue.AttrScheduleTick], err)
			}
			ticks = append(ticks, tick)
			lateness = append(lateness, max(d.PublishedAt.Sub(tick), 0))
		}
	}
}
