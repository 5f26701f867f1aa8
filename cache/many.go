package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// BatchLoader loads several keys from the source of truth at once. Keys it leaves out of the map
// do not exist there (they are cached as not found). Its context is detached from the caller's
// cancellation and carries Config.LoadTimeout.
type BatchLoader[K comparable, V any] func(ctx context.Context, keys []K) (map[K]V, error)

// GetMany returns the values of keys that exist, like Get for each key but in a few round trips:
// one MGET per hash slot (so it works on Redis Cluster), one pipeline taking the locks of the keys
// that missed, one call of load for all the keys whose lock it got, and one pipeline writing them
// back. Keys locked by another process are resolved like Get (waiting for that load). Keys that do
// not exist are absent from the result.
func (s *Store[K, V]) GetMany(ctx context.Context, keys []K, load BatchLoader[K, V]) (map[K]V, error) {
	uniq := make([]K, 0, len(keys))
	seen := make(map[K]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			uniq = append(uniq, k)
		}
	}
	out := make(map[K]V, len(uniq))
	if len(uniq) == 0 {
		return out, nil
	}
	if s.bypassReads.Load() {
		return s.loadManyDegraded(ctx, uniq, load)
	}
	sks := make([]string, len(uniq))
	rks := make([]string, len(uniq))
	for i, k := range uniq {
		sks[i] = keyString(k)
		rks[i] = s.keys.record(sks[i])
	}
	one := oneOf(load)

	raws, err := s.mget(ctx, rks)
	if err != nil {
		return s.manyFailed(ctx, uniq, load, err)
	}
	var missed []int
	for i, raw := range raws {
		if str, ok := raw.(string); ok {
			if rec, ok := decodeRecord(str); ok && s.usable(rec) {
				s.stats.hits.Add(1)
				s.maybeRefresh(ctx, rec, uniq[i], sks[i], one)
				if err := s.take(out, uniq[i], rec); err != nil {
					return nil, err
				}
				continue
			}
		}
		missed = append(missed, i)
	}
	if len(missed) == 0 {
		return out, nil
	}
	s.stats.misses.Add(uint64(len(missed)))

	// Take the locks of the missed keys in one pipeline.
	tokens := make([]string, len(missed))
	calls := make([]scriptCall, len(missed))
	for j, i := range missed {
		tokens[j] = newToken()
		calls[j] = scriptCall{key: rks[i], args: acquireArgs(tokens[j], s.cfg.LockTTL.Milliseconds())}
	}
	cmds, err := s.evalMany(ctx, scriptAcquire, calls)
	if err != nil {
		return s.manyFailed(ctx, uniq, load, err)
	}
	var toLoad, slow []int // indexes into missed
	for j, i := range missed {
		if err := cmds[j].Err(); err != nil {
			return s.manyFailed(ctx, uniq, load, s.redisErr(err))
		}
		res, err := parseAcquire(cmds[j].Val())
		if err != nil {
			return nil, err
		}
		s.observeClock(res.now)
		usable := res.hasRec && s.usable(res.rec)
		switch {
		case res.code == acqFresh, res.code == acqLocked && usable:
			if err := s.take(out, uniq[i], res.rec); err != nil {
				return nil, err
			}
		case res.code == acqAcquired && usable:
			if err := s.take(out, uniq[i], res.rec); err != nil {
				return nil, err
			}
			s.reloadBehind(ctx, uniq[i], sks[i], tokens[j], one)
		case res.code == acqAcquired:
			toLoad = append(toLoad, j)
		default:
			slow = append(slow, j)
		}
	}

	if len(toLoad) > 0 {
		fenced, err := s.loadMany(ctx, uniq, sks, rks, missed, tokens, toLoad, load, out)
		if err != nil {
			return nil, err
		}
		slow = append(slow, fenced...)
	}
	if len(slow) > 0 {
		if err := s.resolveEach(ctx, uniq, missed, slow, one, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadMany calls the batch loader for the keys whose locks GetMany took and writes them back. It
// returns the keys (indexes into missed) whose write-back was fenced off in Strong mode; they must
// be resolved again.
func (s *Store[K, V]) loadMany(ctx context.Context, uniq []K, sks, rks []string, missed []int, tokens []string,
	toLoad []int, load BatchLoader[K, V], out map[K]V,
) ([]int, error) {
	lctx, cancel := s.detach(ctx)
	defer cancel()
	batch := make([]K, len(toLoad))
	for n, j := range toLoad {
		batch[n] = uniq[missed[j]]
	}
	got, lerr := s.callBatch(lctx, batch, load)
	if lerr == nil {
		calls := make([]scriptCall, len(toLoad))
		for n, j := range toLoad {
			i := missed[j]
			a := fillArgs{token: tokens[j], state: stateNotFound, channel: s.keys.channel(sks[i])}
			if v, ok := got[uniq[i]]; ok {
				payload, err := s.cfg.Codec.Marshal(v)
				if err != nil {
					lerr = fmt.Errorf("cache: encode value: %w", err)
					break
				}
				a.state, a.payload = stateValue, payload
			}
			a.ttlms, a.afterms = s.ttls(a.state)
			calls[n] = scriptCall{key: rks[i], args: a.args()}
		}
		if lerr == nil {
			return s.fillMany(lctx, uniq, sks, missed, toLoad, calls, got, out)
		}
	}
	// The loader failed: release the locks so others can load.
	calls := make([]scriptCall, len(toLoad))
	for n, j := range toLoad {
		i := missed[j]
		calls[n] = scriptCall{key: rks[i], args: []any{tokens[j], s.keys.channel(sks[i])}}
	}
	if cmds, err := s.evalMany(lctx, scriptRelease, calls); err != nil {
		s.cfg.Logger.Warn("cache: release locks", "error", err)
	} else {
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				s.cfg.Logger.Warn("cache: release lock", "error", s.redisErr(err))
			}
		}
	}
	return nil, lerr
}

func (s *Store[K, V]) fillMany(ctx context.Context, uniq []K, sks []string, missed, toLoad []int, calls []scriptCall,
	got map[K]V, out map[K]V,
) ([]int, error) {
	cmds, err := s.evalMany(ctx, scriptFill, calls)
	if err != nil {
		return nil, err
	}
	var fenced []int
	for n, j := range toLoad {
		i := missed[j]
		written, now, err := parseFill(cmds[n].Val())
		if cerr := cmds[n].Err(); cerr != nil {
			err = s.redisErr(cerr)
		}
		if err != nil {
			return nil, err
		}
		s.observeClock(now)
		if !written {
			s.stats.rejected.Add(1)
			if h := s.cfg.Hooks.OnStaleWriteRejected; h != nil {
				h(sks[i])
			}
			if s.cfg.Mode == Strong {
				fenced = append(fenced, j)
				continue
			}
		}
		if v, ok := got[uniq[i]]; ok {
			out[uniq[i]] = v
		}
	}
	return fenced, nil
}

// resolveEach resolves keys one by one like Get, concurrently.
func (s *Store[K, V]) resolveEach(ctx context.Context, uniq []K, missed, which []int, one Loader[K, V], out map[K]V) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for _, j := range which {
		k := uniq[missed[j]]
		wg.Go(func() {
			v, err := s.Get(ctx, k, one)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				out[k] = v
			case errors.Is(err, ErrNotFound):
			case firstErr == nil:
				firstErr = err
			}
		})
	}
	wg.Wait()
	return firstErr
}

// take puts a record's value into out (nothing for a not-found marker).
func (s *Store[K, V]) take(out map[K]V, k K, rec record) error {
	v, err := s.decode(rec)
	switch {
	case err == nil:
		out[k] = v
	case !errors.Is(err, ErrNotFound):
		return err
	}
	return nil
}

// manyFailed applies Config.OnRedisError to a Redis failure in GetMany.
func (s *Store[K, V]) manyFailed(ctx context.Context, keys []K, load BatchLoader[K, V], err error) (map[K]V, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if s.cfg.OnRedisError == LoadOnError {
		s.cfg.Logger.Warn("cache: redis failing, loading directly", "keys", len(keys), "error", err)
		return s.loadManyDegraded(ctx, keys, load)
	}
	return nil, err
}

// loadManyDegraded calls the batch loader without the cache, under the degraded concurrency bound.
func (s *Store[K, V]) loadManyDegraded(ctx context.Context, keys []K, load BatchLoader[K, V]) (map[K]V, error) {
	select {
	case s.degradeSem <- struct{}{}:
		defer func() { <-s.degradeSem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.stats.degraded.Add(1)
	return s.callBatch(ctx, keys, load)
}

// callBatch calls a batch loader with Config.LoadTimeout, turning a panic into ErrLoaderPanic.
func (s *Store[K, V]) callBatch(ctx context.Context, keys []K, load BatchLoader[K, V]) (map[K]V, error) {
	call := loaderCall{
		name: fmt.Sprintf("batch(%d)", len(keys)), panicked: "cache: batch loader panicked",
		what: slog.Int("keys", len(keys)), failed: func(error) bool { return true },
	}
	m, err := guardLoader(s, ctx, call, func(ctx context.Context) (map[K]V, error) { return load(ctx, keys) })
	if m == nil && err == nil {
		m = map[K]V{}
	}
	return m, err
}

// oneOf adapts a batch loader to a single-key Loader.
func oneOf[K comparable, V any](load BatchLoader[K, V]) Loader[K, V] {
	return func(ctx context.Context, k K) (V, error) {
		m, err := load(ctx, []K{k})
		if err != nil {
			var zero V
			return zero, err
		}
		v, ok := m[k]
		if !ok {
			return v, ErrNotFound
		}
		return v, nil
	}
}

// mget reads records: one MGET on a single node, one MGET per hash slot (pipelined) on a cluster.
func (s *Store[K, V]) mget(ctx context.Context, rks []string) ([]any, error) {
	if _, ok := s.rdb.(*redis.ClusterClient); !ok {
		v, err := s.rdb.MGet(ctx, rks...).Result()
		if err != nil {
			return nil, s.redisErr(err)
		}
		return v, nil
	}
	bySlot := make(map[int][]int)
	for i, k := range rks {
		slot := redisx.KeySlot(k)
		bySlot[slot] = append(bySlot[slot], i)
	}
	pipe := s.rdb.Pipeline()
	type group struct {
		idx []int
		cmd *redis.SliceCmd
	}
	groups := make([]group, 0, len(bySlot))
	for _, idx := range bySlot {
		ks := make([]string, len(idx))
		for n, i := range idx {
			ks[n] = rks[i]
		}
		groups = append(groups, group{idx: idx, cmd: pipe.MGet(ctx, ks...)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, s.redisErr(err)
	}
	out := make([]any, len(rks))
	for _, g := range groups {
		for n, v := range g.cmd.Val() {
			out[g.idx[n]] = v
		}
	}
	return out, nil
}

// scriptCall is one script invocation on one key.
type scriptCall struct {
	key  string
	args []any
}

// evalMany runs script once per call, in one pipelined round trip (redisx.ScriptRunner.RunMany:
// a call that found its script missing on a flushed or failed-over node runs once more after a
// reload, and no call runs twice). Each command holds its own reply or error.
func (s *Store[K, V]) evalMany(ctx context.Context, script string, calls []scriptCall) ([]*redis.Cmd, error) {
	runs := make([]redisx.ScriptCall, len(calls))
	for i, c := range calls {
		runs[i] = redisx.ScriptCall{Name: script, Keys: []string{c.key}, Args: c.args}
	}
	cmds, err := s.scripts.runner.RunMany(ctx, runs)
	if err != nil {
		return nil, s.redisErr(err)
	}
	return cmds, nil
}
