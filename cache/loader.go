package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// callLoader calls load with Config.LoadTimeout, turning a panic into ErrLoaderPanic. Not found is
// an answer, not a failure.
func (s *Store[K, V]) callLoader(ctx context.Context, key K, sk string, load Loader[K, V]) (V, error) {
	call := loaderCall{
		name: sk, panicked: "cache: loader panicked", what: slog.String("key", sk),
		failed: func(err error) bool { return !errors.Is(err, ErrNotFound) },
	}
	return guardLoader(s, ctx, call, func(ctx context.Context) (V, error) { return load(ctx, key) })
}

// loaderCall describes one call of a user's loader for guardLoader: its name for Hooks.OnLoad
// (the key, or "batch(n)"), the log line of a panic and what it names (the key or the number of
// keys), and which errors count as failures in Stats.
type loaderCall struct {
	name     string
	panicked string
	what     slog.Attr
	failed   func(error) bool
}

// guardLoader runs one call of a user's loader the same way for Get and GetMany: with
// Config.LoadTimeout, counted in Stats, a panic turned into ErrLoaderPanic and logged with its
// stack, and reported to Hooks.OnLoad.
func guardLoader[K comparable, V, R any](s *Store[K, V], ctx context.Context, call loaderCall,
	load func(ctx context.Context) (R, error),
) (r R, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.LoadTimeout)
	defer cancel()
	s.stats.loads.Add(1)
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			var zero R
			r, err = zero, fmt.Errorf("%w: %v", ErrLoaderPanic, p)
			s.cfg.Logger.Error(call.panicked, call.what, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
		if err != nil && call.failed(err) {
			s.stats.errors.Add(1)
		}
		if h := s.cfg.Hooks.OnLoad; h != nil {
			h(call.name, time.Since(start), err)
		}
	}()
	return load(ctx)
}
