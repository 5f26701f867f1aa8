package relay

import (
	"context"
	"log/slog"
	"time"
)

// maxFinishBatch bounds the outcomes stored by one finish script call.
const maxFinishBatch = 256

// finish stores results, batching those that are ready together: one script call per endpoint.
func (d *Dispatcher) finish(ctx context.Context, results <-chan callResult) {
	batch := make(map[string][]any)
	for r := range results {
		batch[r.endpoint] = append(batch[r.endpoint], r.args...)
		count := 1
	drain:
		for count < maxFinishBatch {
			select {
			case r2, ok := <-results:
				if !ok {
					break drain
				}
				batch[r2.endpoint] = append(batch[r2.endpoint], r2.args...)
				count++
			default:
				break drain
			}
		}
		for ep, args := range batch {
			d.store(ctx, ep, args)
			delete(batch, ep)
		}
	}
}

// store runs finish.lua for one endpoint's outcomes, trying again briefly when Redis fails; a
// result that cannot be stored is lost, and the lease's end retries its task.
func (d *Dispatcher) store(ctx context.Context, endpoint string, args []any) {
	argv := append([]any{len(args) / 10}, args...)
	var err error
	for attempt := range 3 {
		var codes []int64
		codes, err = d.c.run(ctx, scriptFinish, endpoint, argv...).Int64Slice()
		if err == nil {
			for _, c := range codes {
				if c != 1 {
					d.stats.discarded.Add(1)
				}
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
	d.log.Warn("relay: store call results", slog.String("endpoint", endpoint), slog.Int("results", len(args)/10), slog.Any("error", err))
}

// reportLate tells Redis about late calls (late.lua), batching those that are ready together:
// one script call per endpoint. A report must arrive within the second after the call to move
// any token, so it never waits behind call results.
func (d *Dispatcher) reportLate(ctx context.Context, late <-chan lateCall) {
	batch := make(map[string][]any)
	for l := range late {
		batch[l.endpoint] = append(batch[l.endpoint], l.id, float64(l.late.Microseconds())/1000)
		count := 1
	drain:
		for ; count < maxFinishBatch; count++ {
			select {
			case l2, ok := <-late:
				if !ok {
					break drain
				}
				batch[l2.endpoint] = append(batch[l2.endpoint], l2.id, float64(l2.late.Microseconds())/1000)
			default:
				break drain
			}
		}
		for ep, args := range batch {
			if err := d.c.run(ctx, scriptLate, ep, append([]any{len(args) / 2}, args...)...).Err(); err != nil && ctx.Err() == nil {
				d.log.Warn("relay: report late calls", slog.String("endpoint", ep), slog.Any("error", err))
			}
			delete(batch, ep)
		}
	}
}

// maintain runs Client.MaintainOnce every MaintainInterval until ctx ends.
func (d *Dispatcher) maintain(ctx context.Context) {
	t := time.NewTicker(d.cfg.MaintainInterval)
	defer t.Stop()
	for {
		if _, err := d.c.MaintainOnce(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("relay: maintenance pass", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
