package callback

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/internal/redisx"
)

// MaxDestinations bounds the allowed URL prefixes of one namespace.
const MaxDestinations = 100

// Settings are what a namespace allows its callbacks: where they may go and how they are
// signed.
type Settings struct {
	// Secrets sign deliveries, newest first; two are live during a rotation. None: deliveries go
	// unsigned (receivers cannot verify them, so set one).
	Secrets []string
	// Destinations are the URL prefixes callbacks may call (outbound.UnderPrefix rules). None: every
	// callback of the namespace is refused.
	Destinations []string
	// AllowPrivate lets the namespace's callbacks reach loopback and private addresses (its
	// receivers live on the same private network as Sluice). Default false.
	AllowPrivate bool
}

// Store keeps the callback settings of namespaces in Redis: secrets, allowed destinations
// and the private-address switch. The admin API manages them through it; Deliverers read them.
// Every key lives under the prefix and belongs to its namespace (Delete removes them all).
type Store struct {
	rdb     redis.UniversalClient
	prefix  string
	scripts *redisx.ScriptRunner // the settings scripts (scripts.go)
}

// NewStore returns the store under prefix (default "sluice", the queue's prefix).
func NewStore(rdb redis.UniversalClient, prefix string) (*Store, error) {
	return newStore(rdb, prefix, nil)
}

// newStore is NewStore with the logger of the Deliverer that owns the store (nil: slog.Default).
func newStore(rdb redis.UniversalClient, prefix string, logger *slog.Logger) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("callback: NewStore: nil redis client")
	}
	prefix = cmp.Or(prefix, "sluice")
	if !queueName(prefix) {
		return nil, fmt.Errorf("callback: store prefix %q: %s", prefix, queueNameRule)
	}
	return &Store{rdb: rdb, prefix: prefix, scripts: redisx.NewScriptRunner(library, rdb, logger, "callback")}, nil
}

func (s *Store) keys(ns string) (settingsKeys, error) {
	if !queueName(ns) {
		return settingsKeys{}, fieldErr("namespace", "%q %s", ns, queueNameRule)
	}
	return newSettingsKeys(s.prefix, ns), nil
}

// Settings reads a namespace's callback settings in one round trip.
func (s *Store) Settings(ctx context.Context, ns string) (Settings, error) {
	k, err := s.keys(ns)
	if err != nil {
		return Settings{}, err
	}
	pipe := s.rdb.Pipeline()
	secrets := pipe.LRange(ctx, k.secrets, 0, -1)
	dests := pipe.SMembers(ctx, k.destinations)
	private := pipe.HGet(ctx, k.flags, "allow_private")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Settings{}, fmt.Errorf("callback: callback settings of %s: %w", ns, err)
	}
	return Settings{Secrets: secrets.Val(), Destinations: dests.Val(), AllowPrivate: private.Val() == "1"}, nil
}

// RotateSecret makes secret (NewSecret when "") the namespace's signing secret and keeps the
// previous one live, so receivers can switch over: deliveries carry a signature of each. It
// returns the live secrets, newest first. Call RetireSecret once every receiver has the new one.
func (s *Store) RotateSecret(ctx context.Context, ns, secret string) ([]string, error) {
	k, err := s.keys(ns)
	if err != nil {
		return nil, err
	}
	if secret == "" {
		secret = NewSecret()
	}
	if err := CheckSecret(secret); err != nil {
		return nil, fieldErr("secret", "%s", strings.TrimPrefix(err.Error(), "callback: "))
	}
	live, err := s.scripts.Run(ctx, scriptSecretRotate, []string{k.secrets}, secret).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("callback: rotate callback secret of %s: %w", ns, err)
	}
	return live, nil
}

// RetireSecret drops every secret but the newest, ending a rotation. One command.
func (s *Store) RetireSecret(ctx context.Context, ns string) error {
	k, err := s.keys(ns)
	if err != nil {
		return err
	}
	if err := s.rdb.LTrim(ctx, k.secrets, 0, 0).Err(); err != nil {
		return fmt.Errorf("callback: retire callback secret of %s: %w", ns, err)
	}
	return nil
}

// AddDestination allows the namespace's callbacks to call URLs under prefix (an absolute http or
// https URL; see outbound.UnderPrefix). It reports whether the prefix was new.
func (s *Store) AddDestination(ctx context.Context, ns, prefix string) (bool, error) {
	k, err := s.keys(ns)
	if err != nil {
		return false, err
	}
	if err := outbound.CheckPrefix(prefix); err != nil {
		return false, fieldErr("prefix", "%s", strings.TrimPrefix(err.Error(), "outbound: "))
	}
	if len(prefix) > 2048 {
		return false, fieldErr("prefix", "longer than 2048 bytes")
	}
	n, err := s.scripts.Run(ctx, scriptDestinationAdd, []string{k.destinations}, prefix, MaxDestinations).Int()
	if err != nil {
		if redis.HasErrorPrefix(err, "TOO_MANY") {
			return false, fmt.Errorf("%w: %s has %d", ErrTooManyDestinations, ns, MaxDestinations)
		}
		return false, fmt.Errorf("callback: add callback destination of %s: %w", ns, err)
	}
	return n == 1, nil
}

// RemoveDestination stops allowing prefix. It reports whether the prefix was there.
func (s *Store) RemoveDestination(ctx context.Context, ns, prefix string) (bool, error) {
	k, err := s.keys(ns)
	if err != nil {
		return false, err
	}
	n, err := s.rdb.SRem(ctx, k.destinations, prefix).Result()
	if err != nil {
		return false, fmt.Errorf("callback: remove callback destination of %s: %w", ns, err)
	}
	return n == 1, nil
}

// SetAllowPrivate sets whether the namespace's callbacks may reach private and loopback addresses.
func (s *Store) SetAllowPrivate(ctx context.Context, ns string, allow bool) error {
	k, err := s.keys(ns)
	if err != nil {
		return err
	}
	v := "0"
	if allow {
		v = "1"
	}
	if err := s.rdb.HSet(ctx, k.flags, "allow_private", v).Err(); err != nil {
		return fmt.Errorf("callback: set allow_private of %s: %w", ns, err)
	}
	return nil
}

// Delete removes every callback setting of the namespace (when the namespace is deleted).
func (s *Store) Delete(ctx context.Context, ns string) error {
	k, err := s.keys(ns)
	if err != nil {
		return err
	}
	if err := s.rdb.Del(ctx, k.secrets, k.destinations, k.flags).Err(); err != nil {
		return fmt.Errorf("callback: delete callback settings of %s: %w", ns, err)
	}
	return nil
}
