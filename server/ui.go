package server

import (
	"fmt"

	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/ui"
)

// setupUI makes the dashboard (server/ui, docs/dashboard.md). Until the request queue's routes
// (server/tasks) build the server's relay client, the dashboard makes it here, for its endpoint
// and task pages; once they do (and run first), this only passes s.relay on.
func (s *Server) setupUI() error {
	var err error
	if s.relay == nil {
		if s.relay, err = relay.NewClient(s.rdb, relay.Config{Prefix: s.cfg.Prefix, Logger: s.log}); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	s.ui, err = ui.New(ui.Config{
		Redis: s.rdb, Prefix: s.cfg.Prefix, Queue: s.queue, Namespaces: s.namespaces, Tokens: s.tokens,
		Limits: s.limits, Relay: s.relay, Rooms: s.waitroom, AdminToken: s.cfg.AdminToken,
		SampleInterval: s.cfg.UISampleInterval, Logger: s.log,
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}
