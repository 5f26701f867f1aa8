package rooms

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/waitroom"
)

// PassTokenKeys returns the Ed25519 keys of token passes (waitroom.Config.PassTokenKeys): the
// configured ones (comma-separated seeds, 32 bytes in unpadded base64url as `sluice token gen`
// prints them; the first signs, every one verifies and is published), or else one kept in Redis,
// made by the first server that needed it (waitroom.SharedPassTokenKey).
func PassTokenKeys(ctx context.Context, rdb redis.UniversalClient, prefix, configured string) ([]ed25519.PrivateKey, error) {
	if strings.TrimSpace(configured) == "" {
		key, err := waitroom.SharedPassTokenKey(ctx, rdb, prefix)
		if err != nil {
			return nil, err
		}
		return []ed25519.PrivateKey{key}, nil
	}
	var keys []ed25519.PrivateKey
	for i, s := range strings.Split(configured, ",") {
		key, err := waitroom.ParsePassTokenKey(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("room_pass_token_keys: key %d: %w", i+1, err)
		}
		keys = append(keys, key)
	}
	if len(keys) > 3 {
		return nil, fmt.Errorf("room_pass_token_keys: at most three keys (the signing one first), got %d", len(keys))
	}
	return keys, nil
}
