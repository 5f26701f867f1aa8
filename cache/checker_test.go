package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// The consistency checker runs randomised concurrent histories against a versioned in-memory
// "database": writers bump a row's version and then Delete its cache key (sometimes after a
// delay), deleters invalidate at random, readers Get through several Stores sharing one Redis (as
// several processes would), and the loader is slow at random — sometimes slower than the lock, so
// locks are taken over and write-backs fenced. It checks:
//
//   - no stale write: a record that is not marked stale never holds a version older than the
//     newest Delete that returned before the record was read (both modes);
//   - Strong: no Get that starts after a Delete returned yields a version older than that Delete;
//   - both: a Get never yields a version the database never had;
//   - Eventual and Strong: once writes stop, every key converges to the database's version.

// fakeDB is the source of truth: a version per row; version 0 means the row does not exist.
type fakeDB struct {
	mu   sync.Mutex
	rows map[string]int64
}

func (d *fakeDB) write(k string) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rows[k]++
	return d.rows[k]
}

func (d *fakeDB) read(k string) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rows[k]
}

// subject is what the checker drives: a Store, or a deliberately naive cache-aside to prove the
// checker catches the stale write.
type subject interface {
	Get(ctx context.Context, key string, load Loader[string, int64]) (int64, error)
	Delete(ctx context.Context, keys ...string) error
}

type checkParams struct {
	mode      Mode
	reads     int // stop after this many Gets
	keys      int
	subjects  []subject
	recordKey func(string) string
	strict    bool // check the strong-mode read rule
}

type checkResult struct {
	staleWrites []string // violations of the no-stale-write rule
	staleReads  []string // strong-mode read violations
	other       []string
	reads       int64
	writes      int64
}

func (r *checkResult) String() string {
	return fmt.Sprintf("reads %d, writes %d, stale writes %d %v, stale reads %d %v, other %v",
		r.reads, r.writes, len(r.staleWrites), head(r.staleWrites), len(r.staleReads), head(r.staleReads), head(r.other))
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// slowLoader reads the row at a random point of a random delay, sometimes longer than the lock.
func slowLoader(db *fakeDB) Loader[string, int64] {
	return func(ctx context.Context, k string) (int64, error) {
		pause(ctx, time.Duration(rand.IntN(500))*time.Microsecond)
		v := db.read(k)
		d := time.Duration(rand.IntN(3000)) * time.Microsecond
		if rand.IntN(50) == 0 {
			d = 60 * time.Millisecond // slower than the 40ms lock: taken over, write-back fenced
		}
		pause(ctx, d)
		if v == 0 {
			return 0, ErrNotFound
		}
		return v, nil
	}
}

// batchOf turns the slow loader into a batch loader (keys loaded one after the other).
func batchOf(load Loader[string, int64]) BatchLoader[string, int64] {
	return func(ctx context.Context, keys []string) (map[string]int64, error) {
		out := make(map[string]int64, len(keys))
		for _, k := range keys {
			v, err := load(ctx, k)
			switch {
			case err == nil:
				out[k] = v
			case !errors.Is(err, ErrNotFound):
				return nil, err
			}
		}
		return out, nil
	}
}

// pause is the injected database latency (the workload, not a wait for async work).
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func runChecker(t *testing.T, env *redistest.Env, p checkParams) *checkResult {
	t.Helper()
	ctx := context.Background()
	db := &fakeDB{rows: map[string]int64{}}
	load := slowLoader(db)
	keys := make([]string, p.keys)
	floors := make([]atomic.Int64, p.keys) // newest version whose Delete returned, per key
	for i := range keys {
		keys[i] = "row" + strconv.Itoa(i)
	}
	res := &checkResult{}
	var mu sync.Mutex
	report := func(list *[]string, f string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		*list = append(*list, fmt.Sprintf(f, args...))
	}
	raiseFloor := func(i int, v int64) {
		for f := floors[i].Load(); v > f && !floors[i].CompareAndSwap(f, v); f = floors[i].Load() {
		}
	}
	var reads, writes atomic.Int64
	stop := make(chan struct{})
	var stopOnce sync.Once // readers can reach the read count at the same moment
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup

	// Writers: update the row, maybe wait (a delayed invalidation), then Delete.
	for range 2 {
		wg.Go(func() {
			for !stopped() {
				i := rand.IntN(p.keys)
				v := db.write(keys[i])
				writes.Add(1)
				if rand.IntN(3) == 0 {
					pause(ctx, time.Duration(rand.IntN(2000))*time.Microsecond)
				}
				if err := p.subjects[rand.IntN(len(p.subjects))].Delete(ctx, keys[i]); err != nil {
					report(&res.other, "delete: %v", err)
					return
				}
				raiseFloor(i, v)
				pause(ctx, time.Duration(rand.IntN(1500))*time.Microsecond)
			}
		})
	}
	// A deleter invalidating without writes.
	wg.Go(func() {
		for !stopped() {
			i := rand.IntN(p.keys)
			v := db.read(keys[i])
			if err := p.subjects[rand.IntN(len(p.subjects))].Delete(ctx, keys[i]); err != nil {
				report(&res.other, "delete: %v", err)
				return
			}
			raiseFloor(i, v)
			pause(ctx, time.Duration(rand.IntN(3000))*time.Microsecond)
		}
	})
	// Readers.
	for range 6 {
		wg.Go(func() {
			for !stopped() {
				subj := p.subjects[rand.IntN(len(p.subjects))]
				// One read in four is a GetMany of two keys, when the subject has it.
				idx := []int{rand.IntN(p.keys)}
				many, isMany := subj.(interface {
					GetMany(ctx context.Context, keys []string, load BatchLoader[string, int64]) (map[string]int64, error)
				})
				if isMany = isMany && rand.IntN(4) == 0; isMany {
					idx = append(idx, (idx[0]+1+rand.IntN(p.keys-1))%p.keys)
				}
				fl := make([]int64, len(idx))
				for n, i := range idx {
					fl[n] = floors[i].Load()
				}
				got := make([]int64, len(idx))
				if isMany {
					m, err := many.GetMany(ctx, []string{keys[idx[0]], keys[idx[1]]}, batchOf(load))
					if err != nil {
						report(&res.other, "get many: %v", err)
						continue
					}
					for n, i := range idx {
						got[n] = m[keys[i]] // absent: not found, version 0
					}
				} else {
					v, err := subj.Get(ctx, keys[idx[0]], load)
					if errors.Is(err, ErrNotFound) {
						v, err = 0, nil
					}
					if err != nil {
						report(&res.other, "get %s: %v", keys[idx[0]], err)
						continue
					}
					got[0] = v
				}
				for n, i := range idx {
					if p.strict && got[n] < fl[n] {
						report(&res.staleReads, "%s: got v%d, a Delete after v%d had returned (many=%v)", keys[i], got[n], fl[n], isMany)
					}
					if now := db.read(keys[i]); got[n] > now {
						report(&res.other, "%s: got v%d, the database is at v%d", keys[i], got[n], now)
					}
				}
				if reads.Add(1) >= int64(p.reads) {
					stopOnce.Do(func() { close(stop) })
				}
			}
		})
	}
	// A watcher reading raw records: a value not marked stale must not predate a finished Delete.
	wg.Go(func() {
		for !stopped() {
			i := rand.IntN(p.keys)
			floor := floors[i].Load()
			raw, err := env.Client.Get(ctx, p.recordKey(keys[i])).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				report(&res.other, "raw get: %v", err)
				return
			}
			rec, ok := decodeRecord(raw)
			if !ok || !rec.hasValue() || rec.stale() {
				continue
			}
			v := int64(0)
			if rec.state == stateValue {
				v, _ = strconv.ParseInt(rec.payload, 10, 64)
			}
			if v < floor {
				report(&res.staleWrites, "%s: record holds v%d after a Delete at v%d returned", keys[i], v, floor)
			}
		}
	})
	wg.Wait()
	res.reads, res.writes = reads.Load(), writes.Load()

	// Writes have stopped: every key converges to the database.
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range keys {
		want := db.read(k)
		for _, s := range p.subjects {
			for {
				v, err := s.Get(ctx, k, load)
				if errors.Is(err, ErrNotFound) {
					v, err = 0, nil
				}
				if err == nil && v == want {
					break
				}
				if time.Now().After(deadline) {
					report(&res.other, "%s did not converge: got v%d (%v), database v%d", k, v, err, want)
					break
				}
				time.Sleep(time.Millisecond) // poll interval while the background reload lands
			}
		}
	}
	return res
}

func TestConsistencyChecker(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{Strong, Eventual} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			redistest.Each(t, func(t *testing.T, env *redistest.Env) {
				// Strong readers wait for reloads, so a Strong history has fewer reads per second
				// and more writes per read; both make thousands of operations in about a second.
				reads := map[Mode]int{Eventual: 3000, Strong: 1500}[mode]
				if env.Cluster {
					reads /= 2
				}
				cfg := Config{
					Prefix: env.Prefix, Mode: mode, Logger: quiet,
					TTL: 300 * time.Millisecond, EmptyTTL: 100 * time.Millisecond, RefreshAhead: 100 * time.Millisecond,
					LockTTL: 40 * time.Millisecond, WaitTimeout: 10 * time.Second,
				}
				var subjects []subject
				var stores []*Store[string, int64]
				for range 3 { // three "processes"
					s, err := New[string, int64](env.Client, cfg)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = s.Close() })
					stores = append(stores, s)
					subjects = append(subjects, s)
				}
				res := runChecker(t, env, checkParams{
					mode: mode, reads: reads, keys: 6, subjects: subjects,
					recordKey: stores[0].keys.record, strict: mode == Strong,
				})
				var rejected uint64
				for _, s := range stores {
					rejected += s.Stats().StaleWritesRejected
				}
				t.Logf("%s; write-backs fenced off: %d", res, rejected)
				if len(res.staleWrites)+len(res.staleReads)+len(res.other) > 0 {
					t.Fatalf("consistency violated: %s", res)
				}
				if rejected == 0 {
					t.Fatalf("the history never exercised the fence (no write-back rejected)")
				}
			})
		})
	}
}

// naive is plain cache-aside (GET; on a miss load and SET), written in the Store's record format
// so the checker can read it. The checker must catch its stale writes, or it proves nothing.
type naive struct {
	rdb  redis.UniversalClient
	keys keyspace
}

func (n naive) Get(ctx context.Context, k string, load Loader[string, int64]) (int64, error) {
	raw, err := n.rdb.Get(ctx, n.keys.record(k)).Result()
	if err == nil {
		if rec, ok := decodeRecord(raw); ok && rec.state == stateValue {
			return strconv.ParseInt(rec.payload, 10, 64)
		}
		if rec, ok := decodeRecord(raw); ok && rec.state == stateNotFound {
			return 0, ErrNotFound
		}
	}
	v, err := load(ctx, k)
	r := record{state: stateValue, payload: strconv.FormatInt(v, 10)}
	if errors.Is(err, ErrNotFound) {
		r = record{state: stateNotFound}
	} else if err != nil {
		return 0, err
	}
	n.rdb.Set(ctx, n.keys.record(k), r.encode(), time.Second)
	return v, err
}

func (n naive) Delete(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if err := n.rdb.Del(ctx, n.keys.record(k)).Err(); err != nil {
			return err
		}
	}
	return nil
}

func TestConsistencyCheckerCatchesNaiveCacheAside(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	n := naive{rdb: env.Client, keys: newKeyspace(env.Prefix)}
	for round := 1; ; round++ {
		res := runChecker(t, env, checkParams{
			reads: 1500, keys: 3, subjects: []subject{n, n}, recordKey: n.keys.record, strict: true,
		})
		t.Logf("round %d: %s", round, res)
		if len(res.staleWrites) > 0 && len(res.staleReads) > 0 {
			return
		}
		if round == 5 {
			t.Fatalf("the checker did not catch plain cache-aside's stale writes in %d rounds", round)
		}
	}
}
