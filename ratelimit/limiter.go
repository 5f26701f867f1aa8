package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// Result is one decision. A denial is a Result with Allowed false, never an error.
type Result struct {
	// Allowed says whether the events may happen. When it is true they have been counted.
	Allowed bool
	// Limit is the most events the key can have at once: Burst for GCRA, Rate for the others.
	Limit int
	// Remaining is how many more events the key could have right now.
	Remaining int
	// RetryAfter is 0 when Allowed, else how long until the same request would be allowed
	// (assuming nobody else takes the room first).
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full Limit if nothing else happens.
	ResetAfter time.Duration
}

// ErrOutcomeUnknown is wrapped by Refund's error when its call may have reached Redis but the
// reply was lost (a read timeout, a broken connection): the events were given back once or not at
// all. The limiter sends a call to Redis once, never again after a lost reply, so nothing counts
// twice. AllowN never returns it: its failure policy decides such a call, and the events it may
// have counted in Redis free up as any counted event does, as the bucket drains or the window
// moves on.
var ErrOutcomeUnknown = redisx.ErrOutcomeUnknown

// Stats are a Limiter's counters since it was made.
type Stats struct {
	// Allowed and Denied count decisions (of every kind: Redis, fallback, Wait's retries).
	Allowed, Denied uint64
	// RedisErrors counts calls to Redis that failed for a reason other than the caller's context.
	RedisErrors uint64
	// Fallback counts decisions made by the failure policy instead of Redis.
	Fallback uint64
}

// Limiter limits the rate of events per key, with one Redis round trip (one Lua script on one
// key) per decision. It is safe for concurrent use; make one per limit and share it.
type Limiter struct {
	client  redis.UniversalClient
	cfg     Config
	scripts *redisx.ScriptRunner
	script  string // the algorithm's script
	args    []any  // the script's fixed ARGV, see scriptArgs
	local   *localLimiter

	allowed, denied, redisErrors, fallback atomic.Uint64
	// downUntil is when (Unix ns) Redis is tried again after an error; degraded says a warning was
	// logged and not yet followed by a recovery note.
	downUntil atomic.Int64
	degraded  atomic.Bool

	// now, when set (by tests only, through export_test.go), replaces Redis TIME in the scripts:
	// it returns the time in microseconds since the Unix epoch.
	now func() int64
}

// New returns a Limiter that keeps its state in Redis through client (standalone, Sentinel or
// Cluster). It does not talk to Redis until the first decision.
func New(client redis.UniversalClient, cfg Config) (*Limiter, error) {
	if client == nil {
		return nil, errors.New("ratelimit: New: nil client")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Limiter{client: client, cfg: cfg, scripts: redisx.NewScriptRunner(library, client, cfg.Logger, "ratelimit")}
	switch cfg.Algorithm {
	case GCRA:
		l.script = scriptGCRA
	case SlidingLog:
		l.script = scriptSlidingLog
	case SlidingWindow:
		l.script = scriptSlidingWindow
	case FixedWindow:
		l.script = scriptFixedWindow
	}
	l.args = l.scriptArgs()
	if cfg.FailurePolicy == FailLocal {
		l.local = newLocalLimiter(cfg.Limit, cfg.LocalMaxKeys)
	}
	return l, nil
}

// Limit returns the limit every key gets (with its defaults filled in).
func (l *Limiter) Limit() Limit { return l.cfg.Limit }

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Result, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN decides whether n events may happen now for key, and counts them when they may.
//
// n must be between 1 and the most the limit allows at once (Burst for GCRA, Rate for the
// others); anything else returns ErrInvalidCost, since it could never be allowed. To give events
// back, use Refund.
//
// A Redis failure is not returned: the failure policy decides instead (and Stats counts it).
// That includes a reply lost after the call reached Redis: the call is not sent again, so its
// events were counted once or not at all, never twice (ErrOutcomeUnknown). The error is non-nil
// only for an invalid cost or when ctx ends.
func (l *Limiter) AllowN(ctx context.Context, key string, n int) (Result, error) {
	if err := l.checkCost(n); err != nil {
		return Result{Limit: l.cfg.Limit.Burst}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{Limit: l.cfg.Limit.Burst}, err
	}
	if l.redisDown() {
		return l.count(l.decideWithoutRedis(key, n)), nil
	}
	res, err := l.run(ctx, key, n)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Result{Limit: l.cfg.Limit.Burst}, ctxErr
		}
		l.markDown(err)
		return l.count(l.decideWithoutRedis(key, n)), nil
	}
	l.markUp()
	return l.count(res), nil
}

// Wait is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) (Result, error) {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks until n events may happen for key (and counts them), sleeping for each denial's
// RetryAfter rather than polling. It returns early with an error wrapping
// context.DeadlineExceeded when the wait would outlast ctx's deadline, and with ctx's error when
// ctx ends.
func (l *Limiter) WaitN(ctx context.Context, key string, n int) (Result, error) {
	for {
		res, err := l.AllowN(ctx, key, n)
		if err != nil || res.Allowed {
			return res, err
		}
		wait := max(res.RetryAfter, time.Microsecond)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return res, fmt.Errorf("ratelimit: waiting %s for %q would pass the deadline: %w", wait, key, context.DeadlineExceeded)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return res, ctx.Err()
		case <-timer.C:
		}
	}
}

// Refund gives n events back to key, for events that were allowed but should not count (a
// request that failed, say). The key can never end up with more room than its full limit.
// What is given back depends on the algorithm: GCRA moves the bucket's clock back by n events;
// FixedWindow and SlidingWindow take n off the current window's count (SlidingWindow then off the
// previous one); SlidingLog drops the n newest entries. Errors from Redis are returned: a refund
// is not decided by the failure policy (while Redis is down, the local fallback gets it). A refund
// whose reply was lost is not sent again: its error wraps ErrOutcomeUnknown (given back once or
// not at all).
func (l *Limiter) Refund(ctx context.Context, key string, n int) error {
	if n < 1 {
		return fmt.Errorf("%w: refund of %d (must be at least 1)", ErrInvalidCost, n)
	}
	if l.redisDown() {
		if l.local != nil {
			l.local.refund(key, n)
		}
		return nil
	}
	if _, err := l.run(ctx, key, -n); err != nil {
		return fmt.Errorf("ratelimit: refund %q: %w", key, err)
	}
	return nil
}

// Reset forgets everything counted for key.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if l.local != nil {
		l.local.reset(key)
	}
	if err := l.client.Del(ctx, limiterKey(l.cfg.Prefix, l.cfg.Name, key)).Err(); err != nil {
		return fmt.Errorf("ratelimit: reset %q: %w", key, err)
	}
	return nil
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() Stats {
	return Stats{
		Allowed:     l.allowed.Load(),
		Denied:      l.denied.Load(),
		RedisErrors: l.redisErrors.Load(),
		Fallback:    l.fallback.Load(),
	}
}

func (l *Limiter) checkCost(n int) error {
	if n < 1 || n > l.cfg.Limit.Burst {
		return fmt.Errorf("%w: %d (a %s limit of %s allows 1 to %d at once)",
			ErrInvalidCost, n, l.cfg.Algorithm, l.cfg.Limit, l.cfg.Limit.Burst)
	}
	return nil
}

// scriptArgs are the ARGV that precede the cost: the same for every call, so they are built (and
// boxed) once.
func (l *Limiter) scriptArgs() []any {
	lim := l.cfg.Limit
	period := strconv.FormatInt(lim.Period.Microseconds(), 10)
	switch l.cfg.Algorithm {
	case GCRA:
		return []any{strconv.Itoa(lim.Rate), period, strconv.Itoa(lim.Burst)}
	case FixedWindow:
		aligned := "0"
		if l.cfg.AlignWindows {
			aligned = "1"
		}
		return []any{strconv.Itoa(lim.Rate), period, aligned}
	default:
		return []any{strconv.Itoa(lim.Rate), period}
	}
}

// run calls the algorithm's script once; a negative n is a refund. The call is sent to Redis
// once (RunNoRetry): a decision that arrived twice would count its events twice, and keeping a
// call key per decision to answer a repeat would cost Redis a write per decision
// (docs/benchmarks.md). A reply lost after the call reached Redis is an error wrapping
// redisx.ErrOutcomeUnknown: the events were counted once or not at all.
func (l *Limiter) run(ctx context.Context, key string, n int) (Result, error) {
	return l.runWith(ctx, l.scripts.RunNoRetry, key, n)
}

// runner is how a call of a script reaches Redis (ScriptRunner.RunNoRetry; the benchmarks pass
// others to measure the ways a resend could be made safe).
type runner func(ctx context.Context, name string, keys []string, argv ...any) *redis.Cmd

func (l *Limiter) runWith(ctx context.Context, send runner, key string, n int) (Result, error) {
	args := make([]any, 0, len(l.args)+2)
	args = append(append(args, l.args...), n)
	if l.now != nil {
		args = append(args, l.now())
	}
	keys := []string{limiterKey(l.cfg.Prefix, l.cfg.Name, key)}
	v, err := send(ctx, l.script, keys, args...).Int64Slice()
	if err != nil {
		return Result{}, err
	}
	if len(v) != 4 {
		return Result{}, fmt.Errorf("ratelimit: %s script returned %d values, want 4", l.cfg.Algorithm, len(v))
	}
	return Result{
		Allowed:    v[0] == 1,
		Limit:      l.cfg.Limit.Burst,
		Remaining:  int(v[1]),
		RetryAfter: time.Duration(v[2]) * time.Microsecond,
		ResetAfter: time.Duration(v[3]) * time.Microsecond,
	}, nil
}

// decideWithoutRedis applies the failure policy.
func (l *Limiter) decideWithoutRedis(key string, n int) Result {
	l.fallback.Add(1)
	lim := l.cfg.Limit
	switch l.cfg.FailurePolicy {
	case FailOpen:
		return Result{Allowed: true, Limit: lim.Burst, Remaining: lim.Burst - n}
	case FailClosed:
		wait := max(time.Duration(l.downUntil.Load()-time.Now().UnixNano()), time.Millisecond)
		return Result{Limit: lim.Burst, RetryAfter: wait, ResetAfter: wait}
	default:
		return l.local.allowN(key, n)
	}
}

func (l *Limiter) count(r Result) Result {
	if r.Allowed {
		l.allowed.Add(1)
	} else {
		l.denied.Add(1)
	}
	return r
}

// redisDown says whether the limiter is within RetryRedisAfter of a Redis error.
func (l *Limiter) redisDown() bool {
	d := l.downUntil.Load()
	return d != 0 && time.Now().UnixNano() < d
}

func (l *Limiter) markDown(err error) {
	l.redisErrors.Add(1)
	l.downUntil.Store(time.Now().Add(l.cfg.RetryRedisAfter).UnixNano())
	if l.degraded.CompareAndSwap(false, true) {
		l.cfg.Logger.Warn("ratelimit: redis unavailable, deciding by the failure policy",
			"limiter", l.cfg.Name, "policy", l.cfg.FailurePolicy.String(), "retry_after", l.cfg.RetryRedisAfter, "error", err)
	}
}

func (l *Limiter) markUp() {
	if l.degraded.Load() && l.degraded.CompareAndSwap(true, false) {
		l.cfg.Logger.Info("ratelimit: redis is back", "limiter", l.cfg.Name)
	}
}
