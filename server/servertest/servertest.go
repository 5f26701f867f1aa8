// Package servertest starts a real Sluice server on loopback listeners for the tests of packages
// that talk to it over HTTP (the CLI, the load generator). The server package's own tests have
// their own helper, since they live inside the package.
package servertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server"
)

// Server is a running server; it stops when the test ends.
type Server struct {
	PublicURL string
	AdminURL  string
	Env       *redistest.Env
}

// Start runs a server on a per-test Redis prefix with cfg (RedisURL, Prefix, Logger and Out are
// filled in) and stops it when the test ends, failing the test if serving failed.
func Start(t testing.TB, cfg server.Config) *Server {
	t.Helper()
	env := redistest.New(t)
	cfg.RedisURL, cfg.Prefix = env.URL, env.Prefix
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Out = io.Discard
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("server.New: %v", err)
	}
	var lc net.ListenConfig
	pub, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	adm, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pub, adm) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &Server{PublicURL: "http://" + pub.Addr().String(), AdminURL: "http://" + adm.Addr().String(), Env: env}
}
