package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Loader loads one key from the source of truth. It returns ErrNotFound (possibly wrapped) when
// the key does not exist there. Its context is detached from the callers waiting for it (one of
// them giving up does not cancel it) and carries its own deadline, Config.LoadTimeout.
type Loader[K comparable, V any] func(ctx context.Context, key K) (V, error)

// Store is a cache-aside cache of V values keyed by K, kept in Redis. It is safe for concurrent
// use, also by many processes sharing one Redis and prefix. Close it when done.
type Store[K comparable, V any] struct {
	rdb     redis.UniversalClient
	cfg     Config
	keys    keyspace
	scripts scripts
	notify  *notifier

	flights    flightGroup[V]
	degraded   flightGroup[V]
	degradeSem chan struct{}
	refreshing sync.Map // keys with a background reload running in this process

	bypassReads   atomic.Bool
	bypassDeletes atomic.Bool
	clockOffset   atomic.Int64 // Redis time minus local time, in ms
	clockKnown    atomic.Bool
	stats         counters
	jsonCodec     bool // Codec is JSON: string values decode without a copy

	mu        sync.Mutex // guards closed and wg.Add
	closed    bool
	closeCtx  context.Context
	closeFunc context.CancelFunc
	wg        sync.WaitGroup
}

// New returns a Store on rdb (standalone, Sentinel or Cluster). It does no I/O.
func New[K comparable, V any](rdb redis.UniversalClient, cfg Config) (*Store[K, V], error) {
	if rdb == nil {
		return nil, errors.New("cache: nil Redis client")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ks := newKeyspace(cfg.Prefix)
	closeCtx, closeFunc := context.WithCancel(context.Background()) //nolint:gosec // G118: Close calls closeFunc
	s := &Store[K, V]{
		rdb:        rdb,
		cfg:        cfg,
		keys:       ks,
		scripts:    newScripts(rdb, cfg.Logger),
		notify:     newNotifier(rdb, ks.pattern),
		degradeSem: make(chan struct{}, cfg.DegradedConcurrency),
		closeCtx:   closeCtx,
		closeFunc:  closeFunc,
	}
	_, s.jsonCodec = cfg.Codec.(JSON)
	s.bypassReads.Store(cfg.BypassReads)
	s.bypassDeletes.Store(cfg.BypassDeletes)
	return s, nil
}

// Close stops background reloads and loads in flight (their contexts are cancelled), waits for
// them and unsubscribes. Calls after Close fail with ErrClosed.
func (s *Store[K, V]) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.closeFunc()
	s.wg.Wait()
	s.notify.close()
	return nil
}

// Stats returns the Store's counters.
func (s *Store[K, V]) Stats() Stats { return s.stats.snapshot() }

// BypassReads switches cache reads off (true) or back on. While off, Get and GetMany call the
// loader directly under the degraded guard and touch no Redis key.
func (s *Store[K, V]) BypassReads(on bool) { s.bypassReads.Store(on) }

// BypassDeletes switches Delete off (true: it does nothing) or back on.
func (s *Store[K, V]) BypassDeletes(on bool) { s.bypassDeletes.Store(on) }

// Get returns the value of key: from the cache when it holds one (one plain GET), otherwise from
// load, called at most once at a time per key across every process sharing the Redis, while the
// other callers wait for its result. When load returns ErrNotFound, that answer is cached for
// Config.EmptyTTL and Get returns ErrNotFound.
func (s *Store[K, V]) Get(ctx context.Context, key K, load Loader[K, V]) (V, error) {
	sk := keyString(key)
	if s.bypassReads.Load() {
		return s.loadDegraded(ctx, key, sk, load)
	}
	raw, err := s.rdb.Get(ctx, s.keys.record(sk)).Result()
	switch {
	case err == nil:
		if rec, ok := decodeRecord(raw); ok && s.usable(rec) {
			s.stats.hits.Add(1)
			s.maybeRefresh(ctx, rec, key, sk, load)
			return s.decode(rec)
		}
	case errors.Is(err, redis.Nil):
	default:
		return s.redisFailed(ctx, key, sk, load, s.redisErr(err))
	}
	s.stats.misses.Add(1)
	// Any time after the GET reply will do for the Strong-mode check in miss (later is stricter).
	v, err := s.miss(ctx, key, sk, time.Now(), load)
	if isRedisError(err) {
		return s.redisFailed(ctx, key, sk, load, err)
	}
	return v, err
}

// Set writes value through to the cache (for callers that know it is the latest), fencing off
// every load in flight for the key.
func (s *Store[K, V]) Set(ctx context.Context, key K, value V) error {
	payload, err := s.cfg.Codec.Marshal(value)
	if err != nil {
		return fmt.Errorf("cache: encode value: %w", err)
	}
	sk := keyString(key)
	ttl, after := s.ttls(stateValue)
	now, err := s.scripts.runSet(ctx, s.keys.record(sk), stateValue, payload, ttl, after, s.keys.channel(sk))
	if err != nil {
		return s.redisErr(err)
	}
	s.observeClock(now)
	return nil
}

// Delete invalidates keys after their source of truth changed, and fences every load in flight
// for them: none can write back what it read before the Delete. In Strong mode no Get that starts
// after Delete returns gets a value older than it; in Eventual mode readers may get the old value
// while one of them reloads it.
func (s *Store[K, V]) Delete(ctx context.Context, keys ...K) error {
	if s.bypassDeletes.Load() || len(keys) == 0 {
		return nil
	}
	mode := "eventual"
	if s.cfg.Mode == Strong {
		mode = "strong"
	}
	calls := make([]scriptCall, len(keys))
	for i, k := range keys {
		sk := keyString(k)
		calls[i] = scriptCall{key: s.keys.record(sk), args: []any{mode, s.keys.channel(sk)}}
	}
	cmds, err := s.evalMany(ctx, scriptDelete, calls)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return s.redisErr(err)
		}
	}
	return nil
}

// usable reports whether a reader may return the record's value.
func (s *Store[K, V]) usable(rec record) bool {
	return rec.hasValue() && (s.cfg.Mode == Eventual || !rec.stale())
}

// decode turns a record holding a value or a not-found marker into Get's result.
func (s *Store[K, V]) decode(rec record) (V, error) {
	var v V
	if rec.state == stateNotFound {
		return v, ErrNotFound
	}
	if s.jsonCodec {
		// Hit-path fast path: a plain JSON string becomes a substring of the reply, no copy.
		if p, ok := any(&v).(*string); ok && plainJSONString(rec.payload) {
			*p = rec.payload[1 : len(rec.payload)-1]
			return v, nil
		}
	}
	if err := s.cfg.Codec.Unmarshal([]byte(rec.payload), &v); err != nil {
		return v, fmt.Errorf("cache: decode value: %w", err)
	}
	return v, nil
}

// maybeRefresh starts a background reload when the record is stale or due for refresh-ahead and
// nobody holds its lock. The decision uses Redis's clock as estimated from script replies; the
// script that takes the lock decides again with Redis TIME.
func (s *Store[K, V]) maybeRefresh(ctx context.Context, rec record, key K, sk string, load Loader[K, V]) {
	if rec.refreshAt == 0 {
		return
	}
	if now, known := s.redisNow(); known {
		if rec.lockUntil > now || (rec.refreshAt != staleMark && now < rec.refreshAt) {
			return
		}
	}
	s.refresh(ctx, key, sk, load)
}

// refresh reloads key in the background unless this process already does.
func (s *Store[K, V]) refresh(ctx context.Context, key K, sk string, load Loader[K, V]) {
	if _, busy := s.refreshing.LoadOrStore(sk, struct{}{}); busy {
		return
	}
	ok := s.goDetached(ctx, func(bctx context.Context) {
		defer s.refreshing.Delete(sk)
		token := newToken()
		res, err := s.acquire(bctx, sk, token)
		if err != nil {
			s.cfg.Logger.Warn("cache: refresh", "key", sk, "error", err)
			return
		}
		if res.code != acqAcquired {
			return
		}
		s.stats.refreshes.Add(1)
		s.loadAndFill(bctx, key, sk, token, load, nil)
	})
	if !ok {
		s.refreshing.Delete(sk)
	}
}

// miss resolves a key the hit path could not answer, sharing the work with the other callers of
// the process. got is when the caller's GET reply arrived.
//
// In Strong mode a caller takes a shared result only if the Redis command that decided it was sent
// after the caller's own GET returned: that command then ran after any Delete that returned before
// the caller started, so the result is not older than that Delete. A caller that joined too late
// goes around again (and typically finds the value just written).
func (s *Store[K, V]) miss(ctx context.Context, key K, sk string, got time.Time, load Loader[K, V]) (V, error) {
	var zero V
	for {
		f, leader := s.flights.join(sk)
		if leader && !s.goDetached(ctx, func(fctx context.Context) {
			v, err := s.resolve(fctx, f, key, sk, load)
			s.flights.finish(sk, f, v, err)
		}) {
			s.flights.finish(sk, f, zero, ErrClosed)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		if s.cfg.Mode == Eventual || got.Before(f.decided) || (f.err != nil && !errors.Is(f.err, ErrNotFound)) {
			return f.val, f.err
		}
	}
}

// resolve is the shared work of a miss: take the key's lock and load, or wait for whoever holds it.
func (s *Store[K, V]) resolve(ctx context.Context, f *flight[V], key K, sk string, load Loader[K, V]) (V, error) {
	var zero V
	deadline := time.Now().Add(s.cfg.WaitTimeout)
	for {
		// Register for the key's wake-up before looking at the record, so a write published after
		// the look is not missed.
		w, err := s.notify.watch(ctx, s.keys.channel(sk))
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return zero, err
			}
			return zero, s.redisErr(err)
		}
		token := newToken()
		f.decided = time.Now()
		res, err := s.acquire(ctx, sk, token)
		if err != nil {
			w.stop()
			return zero, err
		}
		switch res.code {
		case acqFresh:
			w.stop()
			return s.decode(res.rec)
		case acqAcquired:
			w.stop()
			if res.hasRec && s.usable(res.rec) {
				// A value due for a reload (stale or refresh-ahead): serve it, reload behind it.
				s.reloadBehind(ctx, key, sk, token, load)
				return s.decode(res.rec)
			}
			r := s.loadAndFill(ctx, key, sk, token, load, &f.decided)
			switch {
			case r.fillErr != nil && s.cfg.Mode == Strong:
				return zero, r.fillErr
			case r.written || r.fillErr != nil || s.cfg.Mode == Eventual:
				return r.val, r.err
			case r.err != nil && !errors.Is(r.err, ErrNotFound):
				return zero, r.err
			}
			// Strong mode, write-back fenced off: what was loaded may predate a Delete. Again.
		default:
			if res.hasRec && s.usable(res.rec) {
				w.stop()
				return s.decode(res.rec)
			}
			left := time.Until(deadline)
			if left <= 0 {
				w.stop()
				return zero, ErrWaitTimeout
			}
			s.stats.waits.Add(1)
			wait := time.Duration(max(res.rec.lockUntil-res.now, 0)+1) * time.Millisecond
			err := s.wait(ctx, w, min(wait, left))
			w.stop()
			if err != nil {
				return zero, err
			}
		}
		if time.Now().After(deadline) {
			return zero, ErrWaitTimeout
		}
	}
}

// wait blocks until the waiter is woken, d passes, or the Store closes.
func (s *Store[K, V]) wait(ctx context.Context, w *waiter, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.c:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		if s.closeCtx.Err() != nil {
			return ErrClosed
		}
		return ctx.Err()
	}
}

type loadResult[V any] struct {
	val     V
	err     error // the loader's error (ErrNotFound included)
	written bool  // the write-back was accepted
	fillErr error // the write-back failed in Redis
}

// loadAndFill calls the loader under the lock held by token and writes the result back, unless
// the lock was fenced off meanwhile. decided, when not nil, is set just before the write-back is
// sent. A failed (or panicking) loader releases the lock.
func (s *Store[K, V]) loadAndFill(ctx context.Context, key K, sk, token string, load Loader[K, V], decided *time.Time) loadResult[V] {
	v, err := s.callLoader(ctx, key, sk, load)
	state := byte(stateValue)
	var payload []byte
	switch {
	case errors.Is(err, ErrNotFound):
		state = stateNotFound
	case err != nil:
		s.release(ctx, sk, token)
		return loadResult[V]{val: v, err: err}
	default:
		var merr error
		if payload, merr = s.cfg.Codec.Marshal(v); merr != nil {
			s.release(ctx, sk, token)
			return loadResult[V]{val: v, err: fmt.Errorf("cache: encode value: %w", merr)}
		}
	}
	ttl, after := s.ttls(state)
	if decided != nil {
		*decided = time.Now()
	}
	written, now, ferr := s.scripts.runFill(ctx, s.keys.record(sk), fillArgs{
		token: token, state: state, payload: payload, ttlms: ttl, afterms: after,
		channel: s.keys.channel(sk),
	})
	if ferr != nil {
		return loadResult[V]{val: v, err: err, fillErr: s.redisErr(ferr)}
	}
	s.observeClock(now)
	if !written {
		s.stats.rejected.Add(1)
		if h := s.cfg.Hooks.OnStaleWriteRejected; h != nil {
			h(sk)
		}
	}
	return loadResult[V]{val: v, err: err, written: written}
}

// acquire runs acquire.lua for a key.
func (s *Store[K, V]) acquire(ctx context.Context, sk, token string) (acquireResult, error) {
	res, err := s.scripts.runAcquire(ctx, s.keys.record(sk), token, s.cfg.LockTTL.Milliseconds())
	if err != nil {
		return res, s.redisErr(err)
	}
	s.observeClock(res.now)
	return res, nil
}

// release gives up the lock held by token, logging a failure (the lock then expires by itself).
func (s *Store[K, V]) release(ctx context.Context, sk, token string) {
	if err := s.scripts.runRelease(ctx, s.keys.record(sk), token, s.keys.channel(sk)); err != nil {
		s.cfg.Logger.Warn("cache: release lock", "key", sk, "error", s.redisErr(err))
	}
}

// redisFailed applies Config.OnRedisError to a Redis failure in Get.
func (s *Store[K, V]) redisFailed(ctx context.Context, key K, sk string, load Loader[K, V], err error) (V, error) {
	if ctx.Err() != nil {
		var zero V
		return zero, ctx.Err()
	}
	if s.cfg.OnRedisError == LoadOnError {
		s.cfg.Logger.Warn("cache: redis failing, loading directly", "key", sk, "error", err)
		return s.loadDegraded(ctx, key, sk, load)
	}
	var zero V
	return zero, err
}

// loadDegraded calls the loader without the cache, one call per key at a time in this process and
// at most Config.DegradedConcurrency at once, so a failing Redis does not stampede the database.
func (s *Store[K, V]) loadDegraded(ctx context.Context, key K, sk string, load Loader[K, V]) (V, error) {
	var zero V
	f, leader := s.degraded.join(sk)
	if leader && !s.goDetached(ctx, func(fctx context.Context) {
		var v V
		var err error
		select {
		case s.degradeSem <- struct{}{}:
			s.stats.degraded.Add(1)
			v, err = s.callLoader(fctx, key, sk, load)
			<-s.degradeSem
		case <-fctx.Done():
			err = fctx.Err()
		}
		s.degraded.finish(sk, f, v, err)
	}) {
		s.degraded.finish(sk, f, zero, ErrClosed)
	}
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// detach returns a context that keeps ctx's values but not its cancellation or deadline, and is
// cancelled when the Store closes: shared work must not stop because one caller gave up.
func (s *Store[K, V]) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(s.closeCtx, cancel)
	return dctx, func() {
		stop()
		cancel()
	}
}

// goDetached runs work in a goroutine that Close waits for (goTracked), on a context detached from
// ctx (detach): work shared by several callers, or done behind one, outlives the caller that
// started it. It returns false, running nothing, when the Store is closed.
func (s *Store[K, V]) goDetached(ctx context.Context, work func(ctx context.Context)) bool {
	dctx, cancel := s.detach(ctx)
	if !s.goTracked(func() {
		defer cancel()
		work(dctx)
	}) {
		cancel()
		return false
	}
	return true
}

// reloadBehind reloads a value due for a reload (stale or refresh-ahead) whose lock the caller
// holds with token, in the background while the caller serves the stored value; when the Store
// is closed it gives the lock back instead.
func (s *Store[K, V]) reloadBehind(ctx context.Context, key K, sk, token string, load Loader[K, V]) {
	s.stats.refreshes.Add(1)
	if !s.goDetached(ctx, func(bctx context.Context) { s.loadAndFill(bctx, key, sk, token, load, nil) }) {
		s.release(ctx, sk, token)
	}
}

// goTracked runs fn in a goroutine that Close waits for; it returns false when the Store is closed.
func (s *Store[K, V]) goTracked(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// redisErr counts and reports a Redis failure and marks it as one.
func (s *Store[K, V]) redisErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	s.stats.errors.Add(1)
	if h := s.cfg.Hooks.OnRedisError; h != nil {
		h(err)
	}
	return wrapRedis(err)
}

// ttls returns, for a new record of state, its TTL and its refresh-ahead point (0: none), in ms
// and with the same jitter factor applied to both, so the refresh point stays inside the TTL.
func (s *Store[K, V]) ttls(state byte) (ttl, refreshAfter int64) {
	f := 1.0
	if s.cfg.Jitter > 0 {
		f += s.cfg.Jitter * (2*rand.Float64() - 1)
	}
	jitter := func(d time.Duration) int64 { return max(time.Duration(float64(d)*f).Milliseconds(), 1) }
	if state == stateNotFound {
		return jitter(s.cfg.EmptyTTL), 0
	}
	if s.cfg.RefreshAhead > 0 {
		refreshAfter = jitter(s.cfg.TTL - s.cfg.RefreshAhead)
	}
	return jitter(s.cfg.TTL), refreshAfter
}

// observeClock records Redis's time (ms) as seen in a script reply.
func (s *Store[K, V]) observeClock(redisMs int64) {
	s.clockOffset.Store(redisMs - time.Now().UnixMilli())
	s.clockKnown.Store(true)
}

// redisNow estimates Redis's time in ms. It is used only to decide whether to try a refresh;
// the scripts decide with Redis TIME.
func (s *Store[K, V]) redisNow() (int64, bool) {
	if !s.clockKnown.Load() {
		return 0, false
	}
	return time.Now().UnixMilli() + s.clockOffset.Load(), true
}

// newToken returns a random lock owner token.
func newToken() string { return strconv.FormatUint(rand.Uint64(), 36) }
