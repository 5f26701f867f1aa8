package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/outbound"
)

// MaxCallbackDestinations bounds the allowed URL prefixes of one namespace.
const MaxCallbackDestinations = 100

// ErrTooManyDestinations is returned by AddDestination when the namespace has
// MaxCallbackDestinations prefixes already.
var ErrTooManyDestinations = errors.New("relay: too many callback destinations")

// CallbackSettings are what a namespace allows its callbacks: where they may go and how they are
// signed.
type CallbackSettings struct {
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

// callbackSettingsKeys are one namespace's keys, under the hash tag {cbns:<ns>}.
type callbackSettingsKeys struct {
	secrets, destinations, flags string
}

func newCallbackSettingsKeys(prefix, ns string) callbackSettingsKeys {
	base := prefix + ":callbacks:{cbns:" + ns + "}:"
	return callbackSettingsKeys{secrets: base + "secrets", destinations: base + "destinations", flags: base + "flags"}
}

var (
	scriptCallbackSecretRotate   = redis.NewScript(mustRead("callback_secret_rotate"))
	scriptCallbackDestinationAdd = redis.NewScript(mustRead("callback_destination_add"))
)

// CallbackStore keeps the callback settings of namespaces in Redis: secrets, allowed destinations
// and the private-address switch. The admin API manages them through it; Deliverers read them.
// Every key lives under the prefix and belongs to its namespace (Delete removes them all).
type CallbackStore struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewCallbackStore returns the store under prefix (default "sluice", the queue's prefix).
func NewCallbackStore(rdb redis.UniversalClient, prefix string) (*CallbackStore, error) {
	if rdb == nil {
		return nil, errors.New("relay: NewCallbackStore: nil redis client")
	}
	prefix = cmp.Or(prefix, "sluice")
	if !queueName(prefix) {
		return nil, fmt.Errorf("relay: callback store prefix %q: %s", prefix, queueNameRule)
	}
	return &CallbackStore{rdb: rdb, prefix: prefix}, nil
}

// queueNameRule is the queue package's rule for namespace names, which callbacks follow.
const queueNameRule = "must match ^[-_A-Za-z0-9]+$ and be at most 255 bytes"

func queueName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_'
	}) < 0
}

func (s *CallbackStore) keys(ns string) (callbackSettingsKeys, error) {
	if !queueName(ns) {
		return callbackSettingsKeys{}, fieldErr("namespace", "%q %s", ns, queueNameRule)
	}
	return newCallbackSettingsKeys(s.prefix, ns), nil
}

// Settings reads a namespace's callback settings in one round trip.
func (s *CallbackStore) Settings(ctx context.Context, ns string) (CallbackSettings, error) {
	k, err := s.keys(ns)
	if err != nil {
		return CallbackSettings{}, err
	}
	pipe := s.rdb.Pipeline()
	secrets := pipe.LRange(ctx, k.secrets, 0, -1)
	dests := pipe.SMembers(ctx, k.destinations)
	private := pipe.HGet(ctx, k.flags, "allow_private")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return CallbackSettings{}, fmt.Errorf("relay: callback settings of %s: %w", ns, err)
	}
	return CallbackSettings{Secrets: secrets.Val(), Destinations: dests.Val(), AllowPrivate: private.Val() == "1"}, nil
}

// RotateSecret makes secret (NewSecret when "") the namespace's signing secret and keeps the
// previous one live, so receivers can switch over: deliveries carry a signature of each. It
// returns the live secrets, newest first. Call RetireSecret once every receiver has the new one.
func (s *CallbackStore) RotateSecret(ctx context.Context, ns, secret string) ([]string, error) {
	k, err := s.keys(ns)
	if err != nil {
		return nil, err
	}
	if secret == "" {
		secret = NewSecret()
	}
	if err := CheckSecret(secret); err != nil {
		return nil, fieldErr("secret", "%s", strings.TrimPrefix(err.Error(), "relay: "))
	}
	live, err := scriptCallbackSecretRotate.Run(ctx, s.rdb, []string{k.secrets}, secret).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("relay: rotate callback secret of %s: %w", ns, err)
	}
	return live, nil
}

// RetireSecret drops every secret but the newest, ending a rotation. One command.
func (s *CallbackStore) RetireSecret(ctx context.Context, ns string) error {
	k, err := s.keys(ns)
	if err != nil {
		return err
	}
	if err := s.rdb.LTrim(ctx, k.secrets, 0, 0).Err(); err != nil {
		return fmt.Errorf("relay: retire callback secret of %s: %w", ns, err)
	}
	return nil
}

// AddDestination allows the namespace's callbacks to call URLs under prefix (an absolute http or
// https URL; see outbound.UnderPrefix). It reports whether the prefix was new.
func (s *CallbackStore) AddDestination(ctx context.Context, ns, prefix string) (bool, error) {
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
	n, err := scriptCallbackDestinationAdd.Run(ctx, s.rdb, []string{k.destinations}, prefix, MaxCallbackDestinations).Int()
	if err != nil {
		if redis.HasErrorPrefix(err, "TOO_MANY") {
			return false, fmt.Errorf("%w: %s has %d", ErrTooManyDestinations, ns, MaxCallbackDestinations)
		}
		return false, fmt.Errorf("relay: add callback destination of %s: %w", ns, err)
	}
	return n == 1, nil
}

// RemoveDestination stops allowing prefix. It reports whether the prefix was there.
func (s *CallbackStore) RemoveDestination(ctx context.Context, ns, prefix string) (bool, error) {
	k, err := s.keys(ns)
	if err != nil {
		return false, err
	}
	n, err := s.rdb.SRem(ctx, k.destinations, prefix).Result()
	if err != nil {
		return false, fmt.Errorf("relay: remove callback destination of %s: %w", ns, err)
	}
	return n == 1, nil
}

// SetAllowPrivate sets whether the namespace's callbacks may reach private and loopback addresses.
func (s *CallbackStore) SetAllowPrivate(ctx context.Context, ns string, allow bool) error {
	k, err := s.keys(ns)
	if err != nil {
		return err
	}
	v := "0"
	if allow {
		v = "1"
	}
	if err := s.rdb.HSet(ctx, k.flags, "allow_private", v).Err(); err != nil {
		return fmt.Errorf("relay: set allow_private of %s: %w", ns, err)
	}
	return nil
}

// Delete removes every callback setting of the namespace (when the namespace is deleted).
func (s *CallbackStore) Delete(ctx context.Context, ns string) error {
	k, err := s.keys(ns)
	if err != nil {
		return err
	}
	if err := s.rdb.Del(ctx, k.secrets, k.destinations, k.flags).Err(); err != nil {
		return fmt.Errorf("relay: delete callback settings of %s: %w", ns, err)
	}
	return nil
}
