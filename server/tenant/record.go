package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// readRecord reads the JSON record in field of the hash key (every store of tenancy keeps its
// records so); found is false when there is none. store names the store in errors.
func readRecord[T any](ctx context.Context, rdb redis.UniversalClient, key, field, store string) (rec T, found bool, err error) {
	var zero T
	b, err := rdb.HGet(ctx, key, field).Bytes()
	if errors.Is(err, redis.Nil) {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, fmt.Errorf("%s: lookup: %w", store, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return zero, false, fmt.Errorf("%s: bad record %s: %w", store, field, err)
	}
	return rec, true, nil
}

// readRecords reads every JSON record of the hash key, by field. store names the store in errors.
func readRecords[T any](ctx context.Context, rdb redis.UniversalClient, key, store string) (map[string]T, error) {
	all, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: list: %w", store, err)
	}
	out := make(map[string]T, len(all))
	for field, b := range all {
		var rec T
		if err := json.Unmarshal([]byte(b), &rec); err != nil {
			return nil, fmt.Errorf("%s: bad record %s: %w", store, field, err)
		}
		out[field] = rec
	}
	return out, nil
}
