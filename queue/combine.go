package queue

import (
	"context"

	"github.com/sluicehq/sluice/internal/combine"
)

// combiner merges concurrent calls on one queue into one script call (internal/combine), which is
// what makes single-job publishes, acks and consumes cheap on Redis.
type combiner[Req, Res any] struct {
	c *combine.Combiner[Req, Res]
}

func newCombiner[Req, Res any](run func(ctx context.Context, key string, reqs []Req) ([]Res, error)) *combiner[Req, Res] {
	return &combiner[Req, Res]{c: combine.New(run)}
}

// do runs req, alone or merged with concurrent calls on the same key (combine.Combiner.Do).
func (c *combiner[Req, Res]) do(ctx context.Context, key string, req Req) (Res, error) {
	return c.c.Do(ctx, key, req)
}
