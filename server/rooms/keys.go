package rooms

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// passKeyKey holds the pass key the servers sharing a Redis made for themselves when none is
// configured.
func passKeyKey(prefix string) string { return prefix + ":waitroom:pass_key" }

// PassKeys returns the keys that sign the rooms' cookies: the configured ones (comma-separated,
// each at least 32 bytes; the first signs), or else one kept in Redis, made by the first server
// that needed it (SET NX), so every instance sharing the Redis signs alike.
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
	var b [32]byte
	_, _ = rand.Read(b[:])
	fresh := base64.RawURLEncoding.EncodeToString(b[:])
	key := passKeyKey(prefix)
	if err := rdb.SetNX(ctx, key, fresh, 0).Err(); err != nil {
		return nil, fmt.Errorf("room pass key: %w", err)
	}
	k, err := rdb.Get(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("room pass key: %w", err)
	}
	return [][]byte{[]byte(k)}, nil
}
