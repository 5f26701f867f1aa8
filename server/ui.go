package server

import (
	"fmt"

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
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// publicAddrNow is the public listener's address, "" before Serve bound it.
func (s *Server) publicAddrNow() string {
	if a := s.publicAddr.Load(); a != nil {
		return *a
	}
	return ""
}
