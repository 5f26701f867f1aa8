package queue

import (
	"context"
	"log/slog"
	"time"
)

// LogMiddleware logs every run of the handler: at level when it succeeds, at Warn when it fails,
// with the job id, delivery number, queue, duration and error. A nil log uses slog.Default().
func LogMiddleware(log *slog.Logger, level slog.Level) Middleware {
	if log == nil {
		log = slog.Default()
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, d *Delivery) error {
			start := time.Now()
			err := next(ctx, d)
			attrs := []slog.Attr{
				slog.String("namespace", d.Namespace), slog.String("queue", d.Queue),
				slog.String("job_id", d.ID), slog.Int("delivery", d.Delivery),
				slog.Duration("duration", time.Since(start)),
			}
			if err != nil {
				log.LogAttrs(ctx, slog.LevelWarn, "queue job failed", append(attrs, slog.Any("error", err))...)
			} else {
				log.LogAttrs(ctx, level, "queue job done", attrs...)
			}
			return err
		}
	}
}
