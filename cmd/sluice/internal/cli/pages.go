package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// listAll reads every page of a listing of the API (GET path?cursor=&limit=, answered with the
// items under member and "next_cursor", null on the last page) and returns the items of all.
func listAll[T any](ctx context.Context, c *apiClient, path, member string) ([]T, error) {
	var all []T
	q := url.Values{"limit": {"1000"}}
	for {
		var page map[string]json.RawMessage
		if _, err := c.callJSON(ctx, http.MethodGet, path, q, nil, &page); err != nil {
			return nil, err
		}
		var items []T
		if err := json.Unmarshal(page[member], &items); err != nil {
			return nil, fmt.Errorf("GET %s: %s: %w", path, member, err)
		}
		all = append(all, items...)
		var next *string
		if raw := page["next_cursor"]; len(raw) > 0 {
			if err := json.Unmarshal(raw, &next); err != nil {
				return nil, fmt.Errorf("GET %s: next_cursor: %w", path, err)
			}
		}
		if next == nil || *next == "" {
			return all, nil
		}
		q.Set("cursor", *next)
	}
}
