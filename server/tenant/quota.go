package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Quotas bound what one namespace may hold, so one tenant cannot fill a Redis the others share:
// a create that would pass a quota is refused with a *sluice.QuotaError naming it, checked in the
// script that creates the thing. 0 is no quota.
type Quotas struct {
	// MaxQueues is the most queues the namespace may have (a publish or pause of a new queue
	// past it is refused).
	MaxQueues int64 `json:"max_queues"`
	// MaxTokens is the most tokens the namespace may hold.
	MaxTokens int64 `json:"max_tokens"`
}

// QuotaSettings are a namespace's own quotas as set on the admin API: each one set overrides
// the server's default, each one left nil takes it.
type QuotaSettings struct {
	MaxQueues *int64 `json:"max_queues,omitempty"`
	MaxTokens *int64 `json:"max_tokens,omitempty"`
}

// apply returns defaults with the quotas set in q.
func (q QuotaSettings) apply(defaults Quotas) Quotas {
	if q.MaxQueues != nil {
		defaults.MaxQueues = *q.MaxQueues
	}
	if q.MaxTokens != nil {
		defaults.MaxTokens = *q.MaxTokens
	}
	return defaults
}

// check returns an error naming the first quota that is negative.
func (q QuotaSettings) check() error {
	fields := []struct {
		name string
		v    *int64
	}{{"max_queues", q.MaxQueues}, {"max_tokens", q.MaxTokens}}
	for _, f := range fields {
		if f.v != nil && *f.v < 0 {
			return invalidArg(f.name, "must be 0 (no quota) or more")
		}
	}
	return nil
}

// QuotaStore keeps each namespace's quota settings in one Redis hash and answers a namespace's
// quotas from an in-process cache of at most its TTL (the publish path asks on every new queue).
type QuotaStore struct {
	rdb      redis.UniversalClient
	key      string // hash: namespace -> QuotaSettings JSON
	defaults Quotas
	cache    *lookupCache[QuotaSettings]
}

// NewQuotaStore returns the quota store under prefix, with the server's default quotas.
func NewQuotaStore(rdb redis.UniversalClient, prefix string, defaults Quotas, cacheTTL time.Duration) *QuotaStore {
	return &QuotaStore{rdb: rdb, key: newKeys(prefix).quotas, defaults: defaults, cache: newLookupCache[QuotaSettings](cacheTTL)}
}

// Defaults are the quotas of a namespace that set none of its own.
func (s *QuotaStore) Defaults() Quotas { return s.defaults }

// Settings returns the quotas namespace ns set (nil fields take the defaults).
func (s *QuotaStore) Settings(ctx context.Context, ns string) (QuotaSettings, error) {
	q, _, err := readRecord[QuotaSettings](ctx, s.rdb, s.key, ns, "quota")
	return q, err
}

// Of returns namespace ns's quotas: its settings over the defaults, cached for the store's TTL.
func (s *QuotaStore) Of(ctx context.Context, ns string) (Quotas, error) {
	q, _, err := s.cache.lookup(ns, func() (QuotaSettings, bool, error) {
		q, err := s.Settings(ctx, ns)
		return q, true, err
	})
	if err != nil {
		return Quotas{}, err
	}
	return q.apply(s.defaults), nil
}

// Set replaces namespace ns's quota settings (one HSET) and returns its quotas.
func (s *QuotaStore) Set(ctx context.Context, ns string, q QuotaSettings) (Quotas, error) {
	if err := q.check(); err != nil {
		return Quotas{}, err
	}
	b, err := json.Marshal(q)
	if err != nil {
		return Quotas{}, err
	}
	if err := s.rdb.HSet(ctx, s.key, ns, b).Err(); err != nil {
		return Quotas{}, fmt.Errorf("quota: set: %w", err)
	}
	s.cache.forget(ns)
	return q.apply(s.defaults), nil
}

// Remove drops namespace ns's settings (its namespace is deleted).
func (s *QuotaStore) Remove(ctx context.Context, ns string) error {
	if err := s.rdb.HDel(ctx, s.key, ns).Err(); err != nil {
		return fmt.Errorf("quota: remove: %w", err)
	}
	s.cache.forget(ns)
	return nil
}
