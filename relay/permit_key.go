package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SharedPermitKeyResult is the permit key SharedPermitKey found or made.
type SharedPermitKeyResult struct {
	// Key is the permit key, for Config.PermitKeys.
	Key []byte
	// Created reports that this call made the key: Redis held none yet.
	Created bool
	// RedisKey names where the key is kept, for a note telling the operator so.
	RedisKey string
}

// SharedPermitKey returns the permit key kept in Redis under prefix for processes that were given
// none: the first caller makes a random one (SET NX) and every later caller, in any process
// sharing the Redis and prefix, reads the same, so all of them sign and verify each other's
// permits. The key is then a secret that lives in Redis; Config.PermitKeys keeps it out (and is
// the way to rotate it). A stored key shorter than 32 bytes is an error.
func SharedPermitKey(ctx context.Context, rdb redis.UniversalClient, prefix string) (SharedPermitKeyResult, error) {
	if !validName(prefix) {
		return SharedPermitKeyResult{}, fmt.Errorf("relay: shared permit key: prefix %q: %s", prefix, nameRule)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	fresh := hex.EncodeToString(b)
	key := sharedPermitKeyKey(prefix)
	created, err := rdb.SetNX(ctx, key, fresh, 0).Result()
	if err != nil {
		return SharedPermitKeyResult{}, fmt.Errorf("relay: shared permit key: %w", err)
	}
	stored := fresh
	if !created {
		if stored, err = rdb.Get(ctx, key).Result(); err != nil && !errors.Is(err, redis.Nil) {
			return SharedPermitKeyResult{}, fmt.Errorf("relay: shared permit key: %w", err)
		}
	}
	if len(stored) < 32 {
		return SharedPermitKeyResult{}, fmt.Errorf("relay: the shared permit key stored at %s is shorter than 32 bytes; delete it", key)
	}
	return SharedPermitKeyResult{Key: []byte(stored), Created: created, RedisKey: key}, nil
}
