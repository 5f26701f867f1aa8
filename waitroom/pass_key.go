package waitroom

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SharedPassKey returns a pass key (for Config.PassKeys) kept in Redis under prefix (Config.Prefix;
// "" is its default), made by the first caller that needed one (SET NX: 32 random bytes,
// base64url), so every instance sharing the Redis and the prefix signs and checks alike with no
// key configured. A configured key is better: this one is readable by anyone who can read the
// Redis, and it never rotates.
func SharedPassKey(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]byte, error) {
	if rdb == nil {
		return nil, errors.New("waitroom: SharedPassKey: nil client")
	}
	prefix = cmp.Or(prefix, "sluice")
	if !validPrefix(prefix) {
		return nil, fmt.Errorf("waitroom: SharedPassKey: prefix must not contain '{' or '}', got %q", prefix)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	key := passKeyKey(prefix)
	if err := rdb.SetNX(ctx, key, b64.EncodeToString(b[:]), 0).Err(); err != nil {
		return nil, fmt.Errorf("waitroom: shared pass key: %w", err)
	}
	k, err := rdb.Get(ctx, key).Bytes()
	if err != nil {
		return nil, fmt.Errorf("waitroom: shared pass key: %w", err)
	}
	return k, nil
}
