package ratelimit

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// ErrLeaseLost is returned by Release and Extend for a lease that is not held: it expired (and
// its slot may already be someone else's) or was released before.
var ErrLeaseLost = errors.New("ratelimit: lease not held")

// ConcurrencyConfig configures a Concurrency limiter.
type ConcurrencyConfig struct {
	// Prefix starts every key the limiter writes. Default "sluice". Must not contain '{' or '}'.
	Prefix string
}

// Concurrency is a distributed, leased semaphore: at most limit holders per key at once, each
// holding a lease that ends by itself when its holder dies without releasing it. A key's state is
// one Redis sorted set of lease ids scored by expiry; every call is one Lua script on it.
//
// Unlike Limiter, Concurrency has no failure policy: Redis errors are returned, since a lease
// that Redis never saw cannot be released or extended.
type Concurrency struct {
	client  redis.UniversalClient
	prefix  string
	scripts *redisx.ScriptRunner

	// now, when set (by tests only), replaces Redis TIME in the scripts (µs since the epoch).
	now func() int64
}

// AcquireResult is the outcome of Acquire.
type AcquireResult struct {
	// Acquired says whether a lease was taken.
	Acquired bool
	// LeaseID names the lease, for Release and Extend. Empty when not acquired.
	LeaseID string
	// Held is the number of leases held on the key after the call.
	Held int
	// RetryAfter is 0 when acquired, else how long until the earliest lease expires (a release
	// may free a slot sooner).
	RetryAfter time.Duration
}

// NewConcurrency returns a Concurrency limiter that keeps its leases in Redis through client.
func NewConcurrency(client redis.UniversalClient, cfg ConcurrencyConfig) (*Concurrency, error) {
	if client == nil {
		return nil, errors.New("ratelimit: NewConcurrency: nil client")
	}
	cfg.Prefix = cmp.Or(cfg.Prefix, "sluice")
	if err := validName("Prefix", cfg.Prefix); err != nil {
		return nil, err
	}
	return &Concurrency{client: client, prefix: cfg.Prefix, scripts: redisx.NewScriptRunner(library, client, nil, "ratelimit")}, nil
}

// Acquire takes a lease on key if fewer than limit are held, without waiting. The lease ends
// after lease unless it is extended (Extend) or released (Release) first.
func (c *Concurrency) Acquire(ctx context.Context, key string, limit int, lease time.Duration) (AcquireResult, error) {
	if limit < 1 {
		return AcquireResult{}, fmt.Errorf("ratelimit: acquire %q: limit must be at least 1, got %d", key, limit)
	}
	if lease < time.Microsecond {
		return AcquireResult{}, fmt.Errorf("ratelimit: acquire %q: lease must be at least 1µs, got %s", key, lease)
	}
	id := rand.Text()
	args := []any{limit, lease.Microseconds(), id}
	if c.now != nil {
		args = append(args, c.now())
	}
	v, err := c.scripts.Run(ctx, scriptAcquire, []string{semaphoreKey(c.prefix, key)}, args...).Int64Slice()
	if err != nil {
		return AcquireResult{}, fmt.Errorf("ratelimit: acquire %q: %w", key, err)
	}
	if len(v) != 3 {
		return AcquireResult{}, fmt.Errorf("ratelimit: acquire %q: script returned %d values, want 3", key, len(v))
	}
	res := AcquireResult{Acquired: v[0] == 1, Held: int(v[1]), RetryAfter: time.Duration(v[2]) * time.Microsecond}
	if res.Acquired {
		res.LeaseID = id
	}
	return res, nil
}

// AcquireWait takes a lease on key, waiting until one is free or ctx ends. It is woken by
// releases (through a sharded pub/sub channel it subscribes to before its first try, so no
// release is missed) and otherwise sleeps until the earliest lease expires; it never polls.
// Each waiting call holds one pub/sub connection while it waits.
func (c *Concurrency) AcquireWait(ctx context.Context, key string, limit int, lease time.Duration) (AcquireResult, error) {
	res, err := c.Acquire(ctx, key, limit, lease)
	if err != nil || res.Acquired {
		return res, err
	}

	sub := c.client.SSubscribe(ctx, releasedChannel(c.prefix, key))
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		_ = sub.Close()
		return res, fmt.Errorf("ratelimit: acquire %q: subscribe: %w", key, err)
	}
	woken := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := sub.Receive(ctx); err != nil {
				return // closed below, or the connection broke: the expiry timer still wakes us
			}
			select {
			case woken <- struct{}{}:
			default:
			}
		}
	}()
	defer func() {
		_ = sub.Close()
		<-done
	}()

	for {
		// Subscribed now: a release from here on wakes us, so try again before sleeping.
		res, err = c.Acquire(ctx, key, limit, lease)
		if err != nil || res.Acquired {
			return res, err
		}
		timer := time.NewTimer(max(res.RetryAfter, time.Millisecond))
		select {
		case <-ctx.Done():
			timer.Stop()
			return res, ctx.Err()
		case <-woken:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Release gives a lease back and wakes the callers waiting in AcquireWait. It returns
// ErrLeaseLost when the lease had already expired or been released.
func (c *Concurrency) Release(ctx context.Context, key, leaseID string) error {
	args := []any{leaseID}
	if c.now != nil {
		args = append(args, c.now())
	}
	keys := redisx.OnceKeys(semaphoreCallKey(c.prefix, key), []string{semaphoreKey(c.prefix, key), releasedChannel(c.prefix, key)})
	n, err := c.scripts.Run(ctx, scriptRelease, keys, args...).Int64()
	if err != nil {
		return fmt.Errorf("ratelimit: release %q: %w", key, err)
	}
	if n == 0 {
		return fmt.Errorf("ratelimit: release %q lease %s: %w", key, leaseID, ErrLeaseLost)
	}
	return nil
}

// Extend moves a held lease's end to lease from now. It returns ErrLeaseLost when the lease had
// already expired or been released; an expired lease is never revived, since its slot may have
// been taken.
func (c *Concurrency) Extend(ctx context.Context, key, leaseID string, lease time.Duration) error {
	if lease < time.Microsecond {
		return fmt.Errorf("ratelimit: extend %q: lease must be at least 1µs, got %s", key, lease)
	}
	args := []any{leaseID, lease.Microseconds()}
	if c.now != nil {
		args = append(args, c.now())
	}
	n, err := c.scripts.Run(ctx, scriptExtend, []string{semaphoreKey(c.prefix, key)}, args...).Int64()
	if err != nil {
		return fmt.Errorf("ratelimit: extend %q: %w", key, err)
	}
	if n == 0 {
		return fmt.Errorf("ratelimit: extend %q lease %s: %w", key, leaseID, ErrLeaseLost)
	}
	return nil
}
