package server

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/server/callbacks"
)

// setupCallbacks builds the callback deliverer (package callback; Serve starts it) and the admin
// routes of the namespaces' callback settings (server/callbacks). It runs after startRelay:
// callbacks under an endpoint's target URL take that endpoint's slots through the relay client.
func (s *Server) setupCallbacks() error {
	cfg := s.cfg
	d, err := callback.NewDeliverer(callback.DelivererConfig{
		Queue: s.queue, Redis: s.rdb, Relay: s.relay, Workers: cfg.CallbackWorkers, AllowPrivate: cfg.CallbackAllowPrivate,
		MaxResultBytes: cfg.CallbackMaxResultBytes, DestinationConcurrency: cfg.CallbackDestinationConcurrency,
		DestinationRate: cfg.CallbackDestinationRate, OnDelivery: s.metrics.callbacks.observe, Logger: s.log,
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.deliverer = d
	s.callbacks = callbacks.New(callbacks.Config{Store: d.Store(), Namespace: s.namespaceExists})
	return nil
}

// namespaceExists returns nil when the namespace exists, else its not-found error: callback
// settings are only kept for namespaces that exist.
func (s *Server) namespaceExists(ctx context.Context, ns string) error {
	_, err := s.namespaces.Get(ctx, ns)
	return err
}

// callbackDestinations are the URL prefixes a namespace's callbacks may call, which the job API
// checks a published callback against (jobs.Config.CallbackDestinations).
func (s *Server) callbackDestinations(ctx context.Context, ns string) ([]string, error) {
	set, err := s.deliverer.Store().Settings(ctx, ns)
	return set.Destinations, err
}
