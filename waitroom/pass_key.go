package waitroom

import (
	"cmp"
	"context"
	"crypto/ed25519"
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
	k, err := sharedSecret(ctx, rdb, prefix, passKeyKey, "SharedPassKey")
	if err != nil {
		return nil, err
	}
	return []byte(k), nil
}

// SharedPassTokenKey returns an Ed25519 key (for Config.PassTokenKeys) kept in Redis under prefix,
// made by the first caller that needed one, as SharedPassKey does: every instance sharing the
// Redis signs token passes with the same key and publishes the same JWKS. Its seed is readable by
// anyone who can read the Redis; to rotate it, configure keys (ParsePassTokenKey) with this one
// second (docs/waitroom.md, "Token passes").
func SharedPassTokenKey(ctx context.Context, rdb redis.UniversalClient, prefix string) (ed25519.PrivateKey, error) {
	seed, err := sharedSecret(ctx, rdb, prefix, passTokenKeyKey, "SharedPassTokenKey")
	if err != nil {
		return nil, err
	}
	return ParsePassTokenKey(seed)
}

// ParsePassTokenKey returns the Ed25519 key whose 32-byte seed is s in base64url (unpadded, as
// `sluice token gen` prints one, or SharedPassTokenKey keeps it).
func ParsePassTokenKey(s string) (ed25519.PrivateKey, error) {
	seed, err := b64.DecodeString(s)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("waitroom: a pass token key must be %d bytes in unpadded base64url", ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// sharedSecret returns the secret kept at the key keyOf(prefix) names, made by the first caller
// (SET NX of 32 random bytes in base64url, then GET: whoever came first, everyone reads the same).
func sharedSecret(ctx context.Context, rdb redis.UniversalClient, prefix string, keyOf func(string) string, caller string) (string, error) {
	if rdb == nil {
		return "", fmt.Errorf("waitroom: %s: nil client", caller)
	}
	prefix = cmp.Or(prefix, "sluice")
	if !validPrefix(prefix) {
		return "", fmt.Errorf("waitroom: %s: prefix must not contain '{' or '}', got %q", caller, prefix)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	key := keyOf(prefix)
	if err := rdb.SetNX(ctx, key, b64.EncodeToString(b[:]), 0).Err(); err != nil {
		return "", fmt.Errorf("waitroom: %s: %w", caller, err)
	}
	k, err := rdb.Get(ctx, key).Result()
	if err != nil {
		return "", fmt.Errorf("waitroom: %s: %w", caller, err)
	}
	return k, nil
}

// maxPassTokenKeys bounds Config.PassTokenKeys: the signing key, the one it replaces and one
// published ahead of its turn.
const maxPassTokenKeys = 3

func validateTokenKeys(keys []ed25519.PrivateKey, bind bool) error {
	if len(keys) > maxPassTokenKeys {
		return fmt.Errorf("waitroom: Config.PassTokenKeys must hold at most %d keys, got %d", maxPassTokenKeys, len(keys))
	}
	for i, k := range keys {
		if len(k) != ed25519.PrivateKeySize {
			return fmt.Errorf("waitroom: Config.PassTokenKeys[%d] must be an Ed25519 private key (%d bytes), got %d", i, ed25519.PrivateKeySize, len(k))
		}
	}
	if bind && len(keys) == 0 {
		return errors.New("waitroom: Config.BindPasses needs Config.PassTokenKeys (only token passes carry a binding)")
	}
	return nil
}
