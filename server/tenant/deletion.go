package tenant

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNamespaceDeleting is the answer to a request of a namespace that is being deleted: its
// tokens authenticate no more work, and no token or namespace of its name is created until the
// deletion ends.
var ErrNamespaceDeleting = errors.New("the namespace is being deleted")

// Deletion is the progress of a namespace's deletion. A deletion is a background job kept in
// Redis: any instance carries it on a batch at a time, so it survives the process that started
// it.
type Deletion struct {
	StartedAt     time.Time `json:"started_at"`
	RevokedTokens int64     `json:"revoked_tokens"`
	DeletedQueues int64     `json:"deleted_queues"`
	DeletedJobs   int64     `json:"deleted_jobs"`
}

// DeletionStore keeps the deletions in progress in one hash: field <ns> holds the start time in
// milliseconds, fields <ns>:tokens, <ns>:queues and <ns>:jobs the counts so far (HINCRBY, so
// instances working at once add up). Whether a namespace is being deleted is cached in-process
// for at most the store's TTL, as token lookups are.
type DeletionStore struct {
	rdb    redis.UniversalClient
	keys   keys
	cache  *lookupCache[bool]
	now    func() time.Time
	holder string // names this process in the work lease
}

// NewDeletionStore returns the deletion store under prefix.
func NewDeletionStore(rdb redis.UniversalClient, prefix string, cacheTTL time.Duration) *DeletionStore {
	return &DeletionStore{rdb: rdb, keys: newKeys(prefix), cache: newLookupCache[bool](cacheTTL), now: time.Now,
		holder: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// Start records that namespace ns is being deleted (from now, unless it was already: then the
// deletion goes on) and returns its progress.
func (s *DeletionStore) Start(ctx context.Context, ns string) (Deletion, error) {
	if err := s.rdb.HSetNX(ctx, s.keys.deletions, ns, s.now().UnixMilli()).Err(); err != nil {
		return Deletion{}, fmt.Errorf("deletion: start: %w", err)
	}
	s.cache.forget(ns)
	d, _, err := s.Get(ctx, ns)
	return d, err
}

// Get returns the progress of namespace ns's deletion; found is false when none is running.
func (s *DeletionStore) Get(ctx context.Context, ns string) (Deletion, bool, error) {
	v, err := s.rdb.HMGet(ctx, s.keys.deletions, ns, ns+":tokens", ns+":queues", ns+":jobs").Result()
	if err != nil {
		return Deletion{}, false, fmt.Errorf("deletion: get: %w", err)
	}
	if v[0] == nil {
		return Deletion{}, false, nil
	}
	n := func(x any) int64 {
		str, _ := x.(string)
		i, _ := strconv.ParseInt(str, 10, 64)
		return i
	}
	return Deletion{
		StartedAt: time.UnixMilli(n(v[0])).UTC(), RevokedTokens: n(v[1]), DeletedQueues: n(v[2]), DeletedJobs: n(v[3]),
	}, true, nil
}

// Deleting reports whether namespace ns is being deleted, cached for the store's TTL.
func (s *DeletionStore) Deleting(ctx context.Context, ns string) (bool, error) {
	on, _, err := s.cache.lookup(ns, func() (bool, bool, error) {
		ok, err := s.rdb.HExists(ctx, s.keys.deletions, ns).Result()
		if err != nil {
			return false, false, fmt.Errorf("deletion: check: %w", err)
		}
		return ok, true, nil
	})
	return on, err
}

// Pending lists the namespaces being deleted (a few at most: one HKEYS of the small hash).
func (s *DeletionStore) Pending(ctx context.Context) ([]string, error) {
	fields, err := s.rdb.HKeys(ctx, s.keys.deletions).Result()
	if err != nil {
		return nil, fmt.Errorf("deletion: pending: %w", err)
	}
	out := fields[:0]
	for _, f := range fields {
		if !strings.Contains(f, ":") {
			out = append(out, f)
		}
	}
	return out, nil
}

// Add counts a batch of namespace ns's deletion (one pipeline of HINCRBY).
func (s *DeletionStore) Add(ctx context.Context, ns string, tokens, queues, jobs int64) error {
	pipe := s.rdb.Pipeline()
	for field, n := range map[string]int64{":tokens": tokens, ":queues": queues, ":jobs": jobs} {
		if n != 0 {
			pipe.HIncrBy(ctx, s.keys.deletions, ns+field, n)
		}
	}
	if pipe.Len() == 0 {
		return nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("deletion: progress: %w", err)
	}
	return nil
}

// Finish forgets namespace ns's deletion (one HDEL): its name is free again.
func (s *DeletionStore) Finish(ctx context.Context, ns string) error {
	if err := s.rdb.HDel(ctx, s.keys.deletions, ns, ns+":tokens", ns+":queues", ns+":jobs").Err(); err != nil {
		return fmt.Errorf("deletion: finish: %w", err)
	}
	s.cache.forget(ns)
	return nil
}

// Lease takes the work on namespace ns's deletion for ttl (SET NX PX), so instances do not
// delete the same batch at once; false when another holds it.
func (s *DeletionStore) Lease(ctx context.Context, ns string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.keys.deletionLease(ns), s.holder, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("deletion: lease: %w", err)
	}
	return ok, nil
}
