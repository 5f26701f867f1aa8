package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Page reads about limit namespaces (HSCAN's COUNT: a page may hold a few more, and a small
// registry comes whole in one page) from the position after ("": the start), sorted by name
// within the page, and the position of the next page ("": this page is the last). A namespace
// registered throughout the listing is in at least one page.
func (s *NamespaceStore) Page(ctx context.Context, after string, limit int) ([]Namespace, string, error) {
	var cursor uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil || n == 0 {
			return nil, "", invalidArg("cursor", "not a position in a namespace listing")
		}
		cursor = n
	}
	// HSCAN may answer an empty page that is not the last (a sparse hash after deletions): read
	// on, a bounded number of times.
	var kv []string
	next := cursor
	for range 8 {
		var err error
		kv, next, err = s.rdb.HScan(ctx, s.key, next, "", int64(min(max(limit, 1), MaxPage))).Result()
		if err != nil {
			return nil, "", fmt.Errorf("namespace: list: %w", err)
		}
		if len(kv) > 0 || next == 0 {
			break
		}
	}
	out := make([]Namespace, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		var n Namespace
		if err := json.Unmarshal([]byte(kv[i+1]), &n); err != nil {
			return nil, "", fmt.Errorf("namespace: bad record %s: %w", kv[i], err)
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Namespace) int { return strings.Compare(a.Name, b.Name) })
	out = slices.CompactFunc(out, func(a, b Namespace) bool { return a.Name == b.Name })
	if next == 0 {
		return out, "", nil
	}
	return out, strconv.FormatUint(next, 10), nil
}

// Registered reports which of names are registered namespaces (one HMGET).
func (s *NamespaceStore) Registered(ctx context.Context, names []string) (map[string]bool, error) {
	out := make(map[string]bool, len(names))
	if len(names) == 0 {
		return out, nil
	}
	vals, err := s.rdb.HMGet(ctx, s.key, names...).Result()
	if err != nil {
		return nil, fmt.Errorf("namespace: exists: %w", err)
	}
	for i, v := range vals {
		out[names[i]] = v != nil
	}
	return out, nil
}
