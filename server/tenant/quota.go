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
	// MaxSchedules is the most schedules the namespace may have (setting a new one past it is
	// refused; replacing one is not).
	MaxSchedules int64 `json:"max_schedules"`
	// MaxStoredJobs is the most jobs the namespace's queues may hold (waiting, leased, dead or
	// kept with a result). A publish that would pass it is refused. The check reads the
	// namespace's measured usage (queue.Config.StorageQuota says how fresh), not a counter kept in
	// the write, so the namespace may pass it by what it publishes between two measures.
	MaxStoredJobs int64 `json:"max_stored_jobs"`
	// MaxStoredBytes is the most bytes of Redis memory the namespace's jobs may take, as Redis
	// estimates it (MEMORY USAGE of each queue's records), checked as MaxStoredJobs is.
	MaxStoredBytes int64 `json:"max_stored_bytes"`
}

// QuotaSettings are a namespace's own quotas as set on the admin API: each one set overrides
// the server's default, each one left nil takes it.
type QuotaSettings struct {
	MaxQueues      *int64 `json:"max_queues,omitempty"`
	MaxTokens      *int64 `json:"max_tokens,omitempty"`
	MaxSchedules   *int64 `json:"max_schedules,omitempty"` // new schedules; replacing one is never refused
	MaxStoredJobs  *int64 `json:"max_stored_jobs,omitempty"`
	MaxStoredBytes *int64 `json:"max_stored_bytes,omitempty"`
}

// quotaField is one quota: its name on the admin API, its setting and where it goes in Quotas.
type quotaField struct {
	name string
	set  *int64
	dst  *int64
}

// fields pairs each of q's settings with its quota in dst (which may be nil when only the
// settings are read), so apply and check walk one list.
func (q QuotaSettings) fields(dst *Quotas) []quotaField {
	if dst == nil {
		dst = &Quotas{}
	}
	return []quotaField{
		{"max_queues", q.MaxQueues, &dst.MaxQueues},
		{"max_tokens", q.MaxTokens, &dst.MaxTokens},
		{"max_schedules", q.MaxSchedules, &dst.MaxSchedules},
		{"max_stored_jobs", q.MaxStoredJobs, &dst.MaxStoredJobs},
		{"max_stored_bytes", q.MaxStoredBytes, &dst.MaxStoredBytes},
	}
}

// apply returns defaults with the quotas set in q.
func (q QuotaSettings) apply(defaults Quotas) Quotas {
	for _, f := range q.fields(&defaults) {
		if f.set != nil {
			*f.dst = *f.set
		}
	}
	return defaults
}

// check returns an error naming the first quota that is negative.
func (q QuotaSettings) check() error {
	for _, f := range q.fields(nil) {
		if f.set != nil && *f.set < 0 {
			return invalidArg(f.name, "must be 0 (no quota) or more")
		}
	}
	return nil
}

// Negative names the first of q's quotas below 0 ("" when none is), for a config check.
func (q Quotas) Negative() string {
	for _, f := range (QuotaSettings{MaxQueues: &q.MaxQueues, MaxTokens: &q.MaxTokens, MaxSchedules: &q.MaxSchedules,
		MaxStoredJobs: &q.MaxStoredJobs, MaxStoredBytes: &q.MaxStoredBytes}).fields(nil) {
		if *f.set < 0 {
			return f.name
		}
	}
	return ""
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
