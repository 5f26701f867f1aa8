package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Namespace is a tenant: its tokens and queues live under its name.
type Namespace struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// NamespaceStore is the registry of namespaces. A namespace exists once it is created through
// the admin API or a token is created for it (tokens register their namespace).
type NamespaceStore struct {
	rdb redis.UniversalClient
	key string // hash: name -> record JSON
	now func() time.Time
}

// NewNamespaceStore returns the namespace registry under prefix.
func NewNamespaceStore(rdb redis.UniversalClient, prefix string) *NamespaceStore {
	return &NamespaceStore{rdb: rdb, key: newKeys(prefix).namespaces, now: time.Now}
}

// NameRule is the rule for namespace and queue names (the queue engine's, and lmstfy's).
const NameRule = "must match ^[-_A-Za-z0-9]+$ and be at most 255 bytes"

// ValidName reports whether s follows NameRule.
func ValidName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !IsNameRune(r) }) < 0
}

// IsNameRune reports whether r may appear in a name.
func IsNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// Create registers a namespace. It reports created=false when it already existed (nothing
// changes then).
func (s *NamespaceStore) Create(ctx context.Context, name, description string) (Namespace, bool, error) {
	if !ValidName(name) {
		return Namespace{}, false, invalidArg("name", "%q %s", name, NameRule)
	}
	if len(description) > 1024 {
		return Namespace{}, false, invalidArg("description", "longer than 1024 bytes")
	}
	n := Namespace{Name: name, Description: description, CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	b, err := json.Marshal(n)
	if err != nil {
		return Namespace{}, false, err
	}
	ok, err := s.rdb.HSetNX(ctx, s.key, name, b).Result()
	if err != nil {
		return Namespace{}, false, fmt.Errorf("namespace: create: %w", err)
	}
	if !ok {
		existing, err := s.Get(ctx, name)
		return existing, false, err
	}
	return n, true, nil
}

// ensure registers a namespace unless it exists.
func (s *NamespaceStore) ensure(ctx context.Context, name string) error {
	_, _, err := s.Create(ctx, name, "")
	return err
}

// Get returns a namespace, or an error matching ErrNotFound.
func (s *NamespaceStore) Get(ctx context.Context, name string) (Namespace, error) {
	n, found, err := readRecord[Namespace](ctx, s.rdb, s.key, name, "namespace")
	if err == nil && !found {
		err = notFound("no namespace " + name)
	}
	return n, err
}

// Exists reports whether a namespace is registered.
func (s *NamespaceStore) Exists(ctx context.Context, name string) (bool, error) {
	ok, err := s.rdb.HExists(ctx, s.key, name).Result()
	if err != nil {
		return false, fmt.Errorf("namespace: exists: %w", err)
	}
	return ok, nil
}

// Count returns how many namespaces are registered (one O(1) command).
func (s *NamespaceStore) Count(ctx context.Context) (int64, error) {
	n, err := s.rdb.HLen(ctx, s.key).Result()
	if err != nil {
		return 0, fmt.Errorf("namespace: count: %w", err)
	}
	return n, nil
}

// List returns every namespace by name.
func (s *NamespaceStore) List(ctx context.Context) ([]Namespace, error) {
	recs, err := readRecords[Namespace](ctx, s.rdb, s.key, "namespace")
	if err != nil {
		return nil, err
	}
	out := slices.AppendSeq(make([]Namespace, 0, len(recs)), maps.Values(recs))
	slices.SortFunc(out, func(a, b Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Delete removes a namespace from the registry; it returns an error matching ErrNotFound when
// there was none. (The admin route that deletes a namespace also revokes its tokens and deletes its queues.)
func (s *NamespaceStore) Delete(ctx context.Context, name string) error {
	n, err := s.rdb.HDel(ctx, s.key, name).Result()
	if err != nil {
		return fmt.Errorf("namespace: delete: %w", err)
	}
	if n == 0 {
		return notFound("no namespace " + name)
	}
	return nil
}
