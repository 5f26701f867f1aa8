package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/internal/version"

	"github.com/sluicehq/sluice/server/ui"
)

// setupUI makes the dashboard (server/ui, docs/dashboard.md). It runs after startRelay: its
// endpoint and task pages use the server's relay client, with its permit keys and archive.
func (s *Server) setupUI() error {
	var err error
	s.ui, err = ui.New(ui.Config{
		Redis: s.rdb, Prefix: s.cfg.Prefix, Queue: s.queue, Namespaces: s.namespaces, Tokens: s.tokens,
		Limits: s.limits, Quotas: s.quotas, Deletions: s.deletions, Relay: s.relay, Rooms: s.waitroom, AdminToken: s.cfg.AdminToken,
		SessionTTL: s.cfg.UISessionTTL, SessionIdleTimeout: s.cfg.UISessionIdleTimeout,
		SampleInterval: s.cfg.UISampleInterval, Logger: s.log, PublicAddr: s.publicAddrNow,
		Version: version.String(), RedisMode: s.redisMode(),
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// watchConsumer lists a consume of the native API on the dashboard's servers page while it is
// served (the dashboard is made after the job routes, and before any request); watchLmstfyConsumer
// one of the lmstfy-compatible API.
func (s *Server) watchConsumer(ctx context.Context, ns string, queues []string) func() {
	return s.ui.Presence().Watch(ctx, ui.APINative, ns, queues)
}

func (s *Server) watchLmstfyConsumer(ctx context.Context, ns string, queues []string) func() {
	return s.ui.Presence().Watch(ctx, ui.APILmstfy, ns, queues)
}

// endDashboardSessions is DELETE /v1/dashboard/sessions: every dashboard session ends, on every
// server (docs/dashboard.md, Sessions).
func (s *Server) endDashboardSessions(w http.ResponseWriter, r *http.Request) error {
	if err := s.ui.EndAllSessions(r.Context()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// redisMode is how the server reaches Redis, for the dashboard's Redis panel.
func (s *Server) redisMode() string {
	switch {
	case s.embedded != nil:
		return "embedded (started by this server)"
	case strings.HasPrefix(s.cfg.RedisURL, "redis+sentinel://"):
		return "managed by Sentinel"
	case strings.HasPrefix(s.cfg.RedisURL, "redis+cluster://"):
		return "cluster"
	}
	return "standalone"
}

// publicAddrNow is the public listener's address, "" before Serve bound it.
func (s *Server) publicAddrNow() string {
	if a := s.publicAddr.Load(); a != nil {
		return *a
	}
	return ""
}
