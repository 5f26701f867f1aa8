package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newStore returns a Store on env with the test's prefix and a silent logger, closed at the end.
func newStore[V any](t *testing.T, env *redistest.Env, cfg Config) *Store[string, V] {
	t.Helper()
	cfg.Prefix = env.Prefix
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := New[string, V](env.Client, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// rawRecord reads and decodes a key's record.
func rawRecord(t *testing.T, env *redistest.Env, s *Store[string, string], key string) (record, bool) {
	t.Helper()
	raw, err := env.Client.Get(context.Background(), s.keys.record(key)).Result()
	if errors.Is(err, redis.Nil) {
		return record{}, false
	}
	if err != nil {
		t.Fatalf("raw get: %v", err)
	}
	rec, ok := decodeRecord(raw)
	if !ok {
		t.Fatalf("undecodable record %q", raw)
	}
	return rec, true
}

func constLoader(v string, calls *atomic.Int64) Loader[string, string] {
	return func(context.Context, string) (string, error) {
		calls.Add(1)
		return v, nil
	}
}

func TestGetLoadsOnceThenHits(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{TTL: time.Minute})
		var calls atomic.Int64
		for range 3 {
			v, err := s.Get(ctx, "k", constLoader("v1", &calls))
			if err != nil || v != "v1" {
				t.Fatalf("Get = %q, %v", v, err)
			}
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("loader called %d times, want 1", n)
		}
		rec, ok := rawRecord(t, env, s, "k")
		if !ok || rec.state != stateValue || rec.payload != `"v1"` || rec.lockUntil != 0 || rec.owner != "" {
			t.Fatalf("record = %+v, %v", rec, ok)
		}
		pttl := env.Client.PTTL(ctx, s.keys.record("k")).Val()
		if pttl <= 0 || pttl > time.Minute+6*time.Second {
			t.Fatalf("pttl = %v", pttl)
		}
		st := s.Stats()
		if st.Hits != 2 || st.Misses != 1 || st.Loads != 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

func TestNotFoundIsCached(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{EmptyTTL: 30 * time.Second})
		var calls atomic.Int64
		load := func(context.Context, string) (string, error) {
			calls.Add(1)
			return "", fmt.Errorf("row 7: %w", ErrNotFound)
		}
		for range 3 {
			if _, err := s.Get(ctx, "missing", load); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get error = %v, want ErrNotFound", err)
			}
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("loader called %d times, want 1", n)
		}
		rec, ok := rawRecord(t, env, s, "missing")
		if !ok || rec.state != stateNotFound {
			t.Fatalf("record = %+v, %v", rec, ok)
		}
		if pttl := env.Client.PTTL(ctx, s.keys.record("missing")).Val(); pttl > 33*time.Second {
			t.Fatalf("not-found marker pttl = %v, want about EmptyTTL", pttl)
		}
	})
}

func TestLoaderErrorIsNotCached(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{})
		boom := errors.New("db down")
		if _, err := s.Get(ctx, "k", func(context.Context, string) (string, error) { return "", boom }); !errors.Is(err, boom) {
			t.Fatalf("Get error = %v, want %v", err, boom)
		}
		if _, ok := rawRecord(t, env, s, "k"); ok {
			t.Fatalf("a failed load left a record")
		}
		var calls atomic.Int64
		if v, err := s.Get(ctx, "k", constLoader("ok", &calls)); err != nil || v != "ok" {
			t.Fatalf("Get after failure = %q, %v", v, err)
		}
	})
}

func TestLoaderPanicReleasesLock(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{LockTTL: time.Minute})
		_, err := s.Get(ctx, "k", func(context.Context, string) (string, error) { panic("bad row") })
		if !errors.Is(err, ErrLoaderPanic) {
			t.Fatalf("Get error = %v, want ErrLoaderPanic", err)
		}
		if _, ok := rawRecord(t, env, s, "k"); ok {
			t.Fatalf("the lock survived the panic")
		}
		var calls atomic.Int64
		if v, err := s.Get(ctx, "k", constLoader("ok", &calls)); err != nil || v != "ok" {
			t.Fatalf("Get after panic = %q, %v", v, err)
		}
	})
}

// blockingLoader returns a loader whose first call signals started and then waits for release;
// every call returns the current value of *version.
type blockingLoader struct {
	started chan struct{}
	release chan struct{}
	calls   atomic.Int64
	version atomic.Int64
}

func newBlockingLoader() *blockingLoader {
	return &blockingLoader{started: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockingLoader) load(ctx context.Context, _ string) (string, error) {
	v := b.version.Load() // read the "row" first, then be slow
	if b.calls.Add(1) == 1 {
		close(b.started)
		select {
		case <-b.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return fmt.Sprintf("v%d", v), nil
}

func TestDeleteFencesLoadInFlight(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{Eventual, Strong} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, env *redistest.Env) {
				ctx := context.Background()
				s := newStore[string](t, env, Config{Mode: mode, LockTTL: time.Minute})
				b := newBlockingLoader()
				b.version.Store(1)
				got := make(chan string, 1)
				go func() {
					v, err := s.Get(ctx, "k", b.load)
					if err != nil {
						v = err.Error()
					}
					got <- v
				}()
				<-b.started                                // the load read v1 ...
				b.version.Store(2)                         // ... the database is updated ...
				if err := s.Delete(ctx, "k"); err != nil { // ... and the cache key deleted
					t.Fatalf("Delete: %v", err)
				}
				close(b.release) // now the slow load tries to write v1 back
				v := <-got
				if rec, ok := rawRecord(t, env, s, "k"); ok && rec.payload == `"v1"` {
					t.Fatalf("stale v1 was written after the delete: %+v", rec)
				}
				if s.Stats().StaleWritesRejected == 0 {
					t.Fatalf("no stale write rejected; stats %+v", s.Stats())
				}
				if mode == Strong && v != "v2" {
					t.Fatalf("strong Get returned %q, want the reloaded v2", v)
				}
				var calls atomic.Int64
				testwait.Until(t, time.Minute, "the key to converge to v2", func() bool {
					v, err := s.Get(ctx, "k", constLoader("v2", &calls))
					return err == nil && v == "v2"
				})
			})
		})
	}
}

func TestStrongDeleteMakesReadersReload(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[int](t, env, Config{Mode: Strong})
		var db atomic.Int64
		db.Store(1)
		load := func(context.Context, string) (int, error) { return int(db.Load()), nil }
		if v, _ := s.Get(ctx, "k", load); v != 1 {
			t.Fatalf("Get = %d", v)
		}
		db.Store(2)
		if err := s.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if v, _ := s.Get(ctx, "k", load); v != 2 {
			t.Fatalf("Get after strong delete = %d, want 2", v)
		}
	})
}

func TestEventualDeleteServesOldWhileReloading(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[int](t, env, Config{})
		var db atomic.Int64
		db.Store(1)
		load := func(context.Context, string) (int, error) { return int(db.Load()), nil }
		if v, _ := s.Get(ctx, "k", load); v != 1 {
			t.Fatalf("Get = %d", v)
		}
		db.Store(2)
		if err := s.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		rec, ok := rawRecord(t, env, &Store[string, string]{keys: s.keys}, "k")
		if !ok || !rec.stale() || rec.payload != "1" {
			t.Fatalf("record after eventual delete = %+v, %v; want the old value marked stale", rec, ok)
		}
		testwait.Until(t, time.Minute, "reload to 2", func() bool {
			v, err := s.Get(ctx, "k", load)
			if err != nil || (v != 1 && v != 2) {
				t.Fatalf("Get = %d, %v", v, err)
			}
			return v == 2
		})
	})
}

func TestStormLoadsOnceAcrossStores(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		stores := []*Store[string, string]{newStore[string](t, env, Config{}), newStore[string](t, env, Config{})}
		var calls atomic.Int64
		load := func(ctx context.Context, _ string) (string, error) {
			calls.Add(1)
			select { // a slow query: the workload, not a wait
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			return "hot", nil
		}
		var wg sync.WaitGroup
		var bad atomic.Int64
		for i := range 300 {
			wg.Go(func() {
				v, err := stores[i%2].Get(ctx, "hot", load)
				if err != nil || v != "hot" {
					bad.Add(1)
				}
			})
		}
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("%d Gets failed", bad.Load())
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("loader called %d times across two stores, want 1", n)
		}
	})
}

func TestWaiterIsWokenByTheWrite(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		// A lock far longer than the test: the waiter can only finish by being woken.
		cfg := Config{LockTTL: 5 * time.Minute}
		a, b := newStore[string](t, env, cfg), newStore[string](t, env, cfg)
		bl := newBlockingLoader()
		bl.version.Store(7)
		done := make(chan error, 1)
		go func() {
			_, err := a.Get(ctx, "k", bl.load)
			done <- err
		}()
		<-bl.started
		got := make(chan string, 1)
		go func() {
			var calls atomic.Int64
			v, err := b.Get(ctx, "k", constLoader("from-b", &calls))
			if err != nil {
				v = err.Error()
			}
			got <- v
		}()
		testwait.Until(t, time.Minute, "b to wait", func() bool { return b.Stats().Waits > 0 })
		close(bl.release)
		if err := <-done; err != nil {
			t.Fatalf("a.Get: %v", err)
		}
		if v := <-got; v != "v7" {
			t.Fatalf("b.Get = %q, want a's v7", v)
		}
	})
}

func TestCancelledCallerDoesNotAbortSharedLoad(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s := newStore[string](t, env, Config{})
		bl := newBlockingLoader()
		bl.version.Store(3)
		cctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() {
			_, err := s.Get(cctx, "k", bl.load)
			first <- err
		}()
		<-bl.started
		second := make(chan string, 1)
		go func() {
			v, _ := s.Get(context.Background(), "k", bl.load)
			second <- v
		}()
		cancel()
		if err := <-first; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller got %v", err)
		}
		close(bl.release)
		if v := <-second; v != "v3" {
			t.Fatalf("second caller got %q, want v3 from the shared load", v)
		}
		if n := bl.calls.Load(); n != 1 {
			t.Fatalf("loader called %d times", n)
		}
	})
}

func TestRefreshAhead(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[int](t, env, Config{TTL: 2 * time.Second, RefreshAhead: 1950 * time.Millisecond, Jitter: -1})
		var db, calls atomic.Int64
		db.Store(1)
		load := func(context.Context, string) (int, error) {
			calls.Add(1)
			return int(db.Load()), nil
		}
		if v, err := s.Get(ctx, "k", load); err != nil || v != 1 {
			t.Fatalf("Get = %d, %v", v, err)
		}
		db.Store(2)
		// Within 50ms the value is due; readers keep getting 1 until the background reload lands.
		testwait.Until(t, time.Minute, "refresh-ahead to load 2", func() bool {
			v, err := s.Get(ctx, "k", load)
			if err != nil || (v != 1 && v != 2) {
				t.Fatalf("Get = %d, %v", v, err)
			}
			return v == 2
		})
		if s.Stats().Refreshes == 0 {
			t.Fatalf("no refresh counted: %+v", s.Stats())
		}
	})
}

func TestTinyTTLStillCaches(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{TTL: 300 * time.Millisecond})
		var calls atomic.Int64
		if _, err := s.Get(ctx, "k", constLoader("v", &calls)); err != nil {
			t.Fatal(err)
		}
		pttl := env.Client.PTTL(ctx, s.keys.record("k")).Val()
		if pttl <= 0 || pttl > 330*time.Millisecond {
			t.Fatalf("pttl = %v, want about 300ms", pttl)
		}
		testwait.Until(t, time.Minute, "the value to expire", func() bool {
			return env.Client.Exists(ctx, s.keys.record("k")).Val() == 0
		})
		if _, err := s.Get(ctx, "k", constLoader("v", &calls)); err != nil || calls.Load() != 2 {
			t.Fatalf("reload after expiry: calls %d, err %v", calls.Load(), err)
		}
	})
}

func TestSetFencesAndWrites(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{LockTTL: time.Minute})
		bl := newBlockingLoader()
		bl.version.Store(1)
		done := make(chan string, 1)
		go func() {
			v, _ := s.Get(ctx, "k", bl.load)
			done <- v
		}()
		<-bl.started
		if err := s.Set(ctx, "k", "written"); err != nil {
			t.Fatal(err)
		}
		close(bl.release)
		<-done
		var calls atomic.Int64
		if v, err := s.Get(ctx, "k", constLoader("x", &calls)); err != nil || v != "written" {
			t.Fatalf("Get after Set = %q, %v", v, err)
		}
	})
}

func TestBypassSwitches(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{BypassReads: true})
		var calls atomic.Int64
		for range 2 {
			if v, err := s.Get(ctx, "k", constLoader("db", &calls)); err != nil || v != "db" {
				t.Fatalf("bypassed Get = %q, %v", v, err)
			}
		}
		if calls.Load() != 2 || s.Stats().Degraded != 2 {
			t.Fatalf("calls %d, stats %+v", calls.Load(), s.Stats())
		}
		if n := env.Client.Exists(ctx, s.keys.record("k")).Val(); n != 0 {
			t.Fatalf("a bypassed read wrote to Redis")
		}
		s.BypassReads(false)
		if _, err := s.Get(ctx, "k", constLoader("db", &calls)); err != nil {
			t.Fatal(err)
		}
		s.BypassDeletes(true)
		if err := s.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if rec, ok := rawRecord(t, env, s, "k"); !ok || rec.stale() {
			t.Fatalf("a bypassed delete changed the record: %+v %v", rec, ok)
		}
	})
}

// failHook makes every command of a client fail, as if Redis were down.
type failHook struct{}

var errRedisDown = errors.New("redis down (test)")

func (failHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (failHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(context.Context, redis.Cmder) error { return errRedisDown }
}
func (failHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(context.Context, []redis.Cmder) error { return errRedisDown }
}

func TestRedisDown(t *testing.T) {
	t.Parallel()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	client.AddHook(failHook{})
	down := &redistest.Env{Client: client, Prefix: "down"}
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()

	failing := newStore[string](t, down, Config{})
	var calls atomic.Int64
	if _, err := failing.Get(ctx, "k", constLoader("db", &calls)); !errors.Is(err, errRedisDown) || calls.Load() != 0 {
		t.Fatalf("FailOnError: err %v, loader calls %d", err, calls.Load())
	}

	degraded := newStore[string](t, down, Config{OnRedisError: LoadOnError, DegradedConcurrency: 2})
	var inFlight, peak atomic.Int64
	load := func(context.Context, string) (string, error) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		defer inFlight.Add(-1)
		return "db", nil
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if v, err := degraded.Get(ctx, fmt.Sprint("k", i%8), load); err != nil || v != "db" {
				t.Errorf("LoadOnError Get = %q, %v", v, err)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 2 {
		t.Fatalf("%d degraded loads ran at once, want at most 2", p)
	}
	if st := degraded.Stats(); st.Errors == 0 || st.Degraded == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{})
	defer rdb.Close()
	for name, cfg := range map[string]Config{
		"Jitter":       {Jitter: 1},
		"RefreshAhead": {TTL: time.Second, RefreshAhead: time.Second},
		"Mode":         {Mode: 9},
		"OnRedisError": {OnRedisError: 9},
		"TTL":          {TTL: time.Microsecond},
	} {
		if _, err := New[string, string](rdb, cfg); err == nil {
			t.Errorf("%s: no error", name)
		} else if !errorsContains(err, name) {
			t.Errorf("%s: error %q does not name the field", name, err)
		}
	}
	if _, err := New[string, string](nil, Config{}); err == nil {
		t.Errorf("nil client accepted")
	}
}

func errorsContains(err error, s string) bool {
	return err != nil && len(s) > 0 && contains(err.Error(), s)
}

func contains(a, b string) bool {
	for i := 0; i+len(b) <= len(a); i++ {
		if a[i:i+len(b)] == b {
			return true
		}
	}
	return false
}

func TestTakesOverTheLockOfADeadLoader(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{})
		// A process took the lock and died: its lock runs out a second from now (by Redis time),
		// long enough that even a slow machine's Get finds it held and waits.
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		dead := record{state: stateEmpty, lockUntil: now.UnixMilli() + 1000, owner: "dead"}
		if err := env.Client.Set(ctx, s.keys.record("k"), dead.encode(), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		v, err := s.Get(ctx, "k", constLoader("mine", &calls))
		if err != nil || v != "mine" || calls.Load() != 1 {
			t.Fatalf("Get = %q, %v (loader calls %d); want the lock taken over and loaded", v, err, calls.Load())
		}
		if s.Stats().Waits == 0 {
			t.Fatalf("Get did not wait for the dead loader's lock: %+v", s.Stats())
		}
	})
}

func TestWaitTimeout(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{WaitTimeout: 50 * time.Millisecond})
		now, err := env.Client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		busy := record{state: stateEmpty, lockUntil: now.UnixMilli() + 60_000, owner: "slow"}
		if err := env.Client.Set(ctx, s.keys.record("k"), busy.encode(), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		if _, err := s.Get(ctx, "k", constLoader("x", &calls)); !errors.Is(err, ErrWaitTimeout) || calls.Load() != 0 {
			t.Fatalf("Get = %v (loader calls %d), want ErrWaitTimeout", err, calls.Load())
		}
	})
}

func TestClosedStore(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		s := newStore[string](t, env, Config{})
		_ = s.Close()
		var calls atomic.Int64
		if _, err := s.Get(context.Background(), "k", constLoader("x", &calls)); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get on a closed store = %v, want ErrClosed", err)
		}
	})
}

// A Strong-mode caller must not take the result of an in-process flight whose deciding command ran
// before the caller's own GET: a Delete may have run in between.
func TestStrongLateJoinerDoesNotTakeAnOlderResult(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[string](t, env, Config{Mode: Strong})
		// A flight that decided (read "old" from Redis) before the Delete below.
		f, leader := s.flights.join("k")
		if !leader {
			t.Fatal("the test must lead the flight")
		}
		f.decided = time.Now()
		if err := s.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			var calls atomic.Int64
			v, err := s.Get(ctx, "k", constLoader("new", &calls))
			if err != nil {
				v = err.Error()
			}
			got <- v
		}()
		testwait.Until(t, time.Minute, "the Get to join the flight", func() bool { return f.joiners.Load() == 1 })
		s.flights.finish("k", f, "old", nil)
		if v := <-got; v != "new" {
			t.Fatalf("Get started after the Delete returned %q, want new", v)
		}
	})
}
