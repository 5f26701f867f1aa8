package server

import (
	"context"
	"io"
	"runtime/debug"
)

// gcPercent is the garbage collector's target of a server process unless GOGC is set: the
// server's heap is small and short-lived, and collecting a quarter as often measured about 8% more
// consume+ack requests per second on two cores (docs/benchmarks-http.md).
const gcPercent = 400

// RunSettings runs a server process as `sluice server` does, until ctx ends: the garbage
// collector's target for a server (unless getenv says GOGC is set), the logger the settings ask
// for writing to out (which also gets the first start's welcome), then New, Run and Close.
// The command and the side-by-side benchmarks share it, so what is measured is what runs.
func RunSettings(ctx context.Context, settings Settings, getenv func(string) string, out io.Writer) error {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	cfg := settings.Config
	var err error
	if cfg.Logger, err = settings.NewLogger(out); err != nil {
		return err
	}
	cfg.Out = out
	srv, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	runErr := srv.Run(ctx)
	if err := srv.Close(); err != nil && runErr == nil { //nolint:contextcheck // ctx has ended; Close bounds its own span flush
		runErr = err
	}
	return runErr
}
