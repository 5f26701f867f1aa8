package rooms

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/waitroom"
)

// PassKeys returns the keys that sign the rooms' cookies: the configured ones (comma-separated,
// each at least 32 bytes; the first signs), or else one kept in Redis, made by the first server
// that needed it (waitroom.SharedPassKey), so every instance sharing the Redis signs alike.
func PassKeys(ctx context.Context, rdb redis.UniversalClient, prefix, configured string) ([][]byte, error) {
	if strings.TrimSpace(configured) != "" {
		var keys [][]byte
		for k := range strings.SplitSeq(configured, ",") {
			k = strings.TrimSpace(k)
			if len(k) < 32 {
				return nil, errors.New("room_pass_keys: every key must be at least 32 bytes")
			}
			keys = append(keys, []byte(k))
		}
		if len(keys) > 2 {
			return nil, errors.New("room_pass_keys: at most two keys (the new one first, during a rotation)")
		}
		return keys, nil
	}
	key, err := waitroom.SharedPassKey(ctx, rdb, prefix)
	if err != nil {
		return nil, err
	}
	return [][]byte{key}, nil
}
