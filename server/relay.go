package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/relay/mysqlarchive"
	"github.com/sluicehq/sluice/server/tasks"
)

// startRelay builds the request queue: the archive (with ArchiveDSN), the relay client with its
// completion callbacks (callback jobs of the job queue, which the deliverer sends), the endpoints
// of the config file, and the dispatcher (unless RelayWorkers is negative). Run starts the
// dispatcher; Close stops everything.
func (s *Server) startRelay(ctx context.Context) error {
	cfg := s.cfg
	rc := relay.Config{
		TracerProvider:       s.tracerProvider(),
		Prefix:               cfg.Prefix,
		PendingRetention:     cfg.RelayPendingRetention,
		FinishedRetention:    cfg.RelayFinishedRetention,
		ReadRetention:        cfg.RelayReadRetention,
		IdempotencyRetention: cfg.RelayIdempotencyRetention,
		MaxBodyBytes:         int(cfg.MaxBodyBytes),
		Logger:               s.log,
	}
	completions, err := callback.NewTaskCallbacks(callback.TaskCallbacksConfig{
		Queue: s.queue, Redis: s.rdb, AllowPrivate: cfg.CallbackAllowPrivate, Logger: s.log,
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	rc.Completions = completions
	if rc.PermitKeys, err = s.permitKeys(ctx); err != nil {
		return err
	}
	for _, k := range cfg.RelayGrantKeys {
		rc.GrantKeys = append(rc.GrantKeys, []byte(k))
	}
	if cfg.ArchiveDSN != "" {
		a, err := mysqlarchive.Open(ctx, cfg.ArchiveDSN, mysqlarchive.Config{Retention: cfg.ArchiveRetention, Logger: s.log})
		if err != nil {
			return fmt.Errorf("server: archive: %w", err)
		}
		s.archive, rc.Archive = a, a
	}
	if s.relay, err = relay.NewClient(s.rdb, rc); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	names := make([]string, 0, len(cfg.RelayEndpoints))
	for name := range cfg.RelayEndpoints {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		e, err := tasks.EndpointParams(name, cfg.RelayEndpoints[name])
		if err == nil {
			err = tasks.CheckTarget(ctx, e.TargetURL, cfg.RelayAllowPrivate)
		}
		if err != nil {
			return fmt.Errorf("server: relay_endpoints: %s: %w", name, err)
		}
		if _, err := s.relay.SetEndpoint(ctx, e); err != nil {
			return fmt.Errorf("server: relay_endpoints: %s: %w", name, err)
		}
	}
	if cfg.RelayWorkers >= 0 {
		s.dispatcher, err = relay.NewDispatcher(s.relay, relay.DispatcherConfig{
			Workers: cfg.RelayWorkers,
			// A dispatch may start as many tasks as there are workers (up to 256), so a busy
			// endpoint costs Redis few script calls per task.
			Batch:        min(max(cfg.RelayWorkers, 1), 256),
			AllowPrivate: cfg.RelayAllowPrivate,
			OnCall:       s.metrics.observeCall,
			Logger:       s.log,
		})
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	s.tasks = tasks.New(tasks.Config{
		Relay: s.relay, MaxWait: cfg.MaxConsumeTimeout, Drain: s.drainCtx, AllowPrivateTargets: cfg.RelayAllowPrivate,
		DefaultMaxPriority: cfg.RelayDefaultMaxPriority,
	})
	return nil
}

// permitKeys are relay_permit_keys, or else the key shared in Redis (relay.SharedPermitKey: made
// by the first instance that needed it, with a loud note: it is a secret that now lives in Redis).
func (s *Server) permitKeys(ctx context.Context) ([][]byte, error) {
	if len(s.cfg.RelayPermitKeys) > 0 {
		keys := make([][]byte, len(s.cfg.RelayPermitKeys))
		for i, k := range s.cfg.RelayPermitKeys {
			keys[i] = []byte(k)
		}
		return keys, nil
	}
	shared, err := relay.SharedPermitKey(ctx, s.rdb, s.cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("server: relay permit key: %w (or set relay_permit_keys)", err)
	}
	if shared.Created {
		s.log.Warn("NOTE: relay_permit_keys is not set, so a permit key for online tasks was generated and stored in Redis "+
			"(every instance on this Redis and prefix shares it). Set relay_permit_keys to keep the secret out of Redis "+
			"and to rotate it.", "key", shared.RedisKey)
	}
	return [][]byte{shared.Key}, nil
}

// parseKeys reads a comma-separated list of secrets, each at least 32 bytes.
func parseKeys(v string) ([]string, error) {
	var keys []string
	for k := range strings.SplitSeq(v, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if len(k) < 32 {
			return nil, fmt.Errorf("key %d is %d bytes: each must be at least 32", len(keys)+1, len(k))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// parseEndpoints reads relay_endpoints: a JSON object of endpoint name -> settings, as the body
// of PUT /v1/endpoints/{name}.
func parseEndpoints(v string) (map[string]tasks.EndpointBody, error) {
	var m map[string]tasks.EndpointBody
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("want a JSON object of endpoint name -> settings: %w", err)
	}
	return m, nil
}
