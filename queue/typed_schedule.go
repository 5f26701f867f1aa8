package queue

import (
	"cmp"
	"context"
)

// Schedule creates or replaces schedule name of the queue's namespace: at each tick of p's rule
// it publishes payload, encoded by the queue's codec, to this queue, with the queue's tries and
// TTR unless p.Job names others. p's Namespace, Job.Queue and Job.Payload are the queue's and
// payload's. The workers of the queue receive the ticks' jobs like any other (the tick is in
// Delivery.Attributes[AttrScheduleTick]).
func (q *Queue[T]) Schedule(ctx context.Context, name string, p ScheduleParams, payload T) (Schedule, error) {
	b, err := q.cfg.Codec.Marshal(&payload)
	if err != nil {
		return Schedule{}, invalid("payload", "encode: %v", err)
	}
	p.Namespace, p.Name = q.ns, name
	p.Job.Queue, p.Job.Payload = q.name, b
	p.Job.Tries = cmp.Or(p.Job.Tries, q.cfg.Tries)
	p.Job.TTR = cmp.Or(p.Job.TTR, q.cfg.TTR)
	return q.client.Schedules().Set(ctx, p)
}
