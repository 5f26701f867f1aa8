package queue

import (
	"context"
	"time"
)

// BackdateSchedule moves a schedule's next run to at, as if every scheduler had been down since:
// the outage the catch-up tests simulate.
func BackdateSchedule(ctx context.Context, c *Client, ns, name string, at time.Time) error {
	q, _, err := c.store.ScheduleQueue(ctx, ns, name)
	if err != nil {
		return err
	}
	rec, _, err := c.store.GetSchedule(ctx, ns, q, name)
	if err != nil {
		return err
	}
	_, err = c.store.PutSchedule(ctx, ns, q, name, rec.Spec, at.UnixMilli(), rec.Paused, 0)
	return err
}

// StopSchedulerBetween makes s call stop between its script calls (after "claim", "due" and
// "fire"), the way a process killed there would leave its work.
func StopSchedulerBetween(s *Scheduler, stop func(ctx context.Context, step string)) {
	s.between = stop
}
