package cache

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestScripts(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		sc := newScripts(env.Client, nil)
		ks := newKeyspace(env.Prefix)
		key := ks.record("k")
		seed := func(r record, ttl time.Duration) {
			t.Helper()
			if err := env.Client.Set(ctx, key, r.encode(), ttl).Err(); err != nil {
				t.Fatal(err)
			}
		}
		read := func() record {
			t.Helper()
			raw, err := env.Client.Get(ctx, key).Result()
			if err != nil {
				t.Fatalf("read record: %v", err)
			}
			r, ok := decodeRecord(raw)
			if !ok {
				t.Fatalf("bad record %q", raw)
			}
			return r
		}

		// A missing key: the lock is taken as an 'e' record that expires with the lock.
		res, err := sc.runAcquire(ctx, key, "me", 60000)
		if err != nil || res.code != acqAcquired || res.hasRec {
			t.Fatalf("acquire on missing = %+v, %v", res, err)
		}
		if r := read(); r.state != stateEmpty || r.owner != "me" || r.lockUntil != res.now+60000 {
			t.Fatalf("lock record = %+v (now %d)", r, res.now)
		}
		if pttl := env.Client.PTTL(ctx, key).Val(); pttl <= 0 || pttl > time.Minute {
			t.Fatalf("lock pttl = %v", pttl)
		}
		// Someone else is refused while the lock lives.
		if res, _ := sc.runAcquire(ctx, key, "other", 60000); res.code != acqLocked || res.rec.owner != "me" {
			t.Fatalf("acquire on locked = %+v", res)
		}
		// A fill by a stranger is refused; by the owner, accepted, with the lock cleared.
		fa := fillArgs{token: "other", state: stateValue, payload: []byte(`"x"`), ttlms: 60000, channel: ks.channel("k")}
		if ok, _, _ := sc.runFill(ctx, key, fa); ok {
			t.Fatalf("a stranger's fill was accepted")
		}
		fa.token, fa.afterms = "me", 10000
		ok, now, err := sc.runFill(ctx, key, fa)
		if err != nil || !ok {
			t.Fatalf("owner's fill = %v, %v", ok, err)
		}
		if r := read(); r.state != stateValue || r.payload != `"x"` || r.owner != "" || r.lockUntil != 0 || r.refreshAt != now+10000 {
			t.Fatalf("filled record = %+v", r)
		}
		// A fresh value: acquire reports it and changes nothing.
		if res, _ := sc.runAcquire(ctx, key, "me2", 1000); res.code != acqFresh || res.rec.payload != `"x"` {
			t.Fatalf("acquire on fresh = %+v", res)
		}

		// An expired lock is taken over, keeping the value and its TTL.
		seed(record{state: stateValue, lockUntil: 1, owner: "dead", payload: "1", refreshAt: 2}, time.Minute)
		if res, _ := sc.runAcquire(ctx, key, "new", 1000); res.code != acqAcquired || res.rec.payload != "1" {
			t.Fatalf("takeover = %+v", res)
		}
		if r := read(); r.owner != "new" || r.payload != "1" {
			t.Fatalf("after takeover = %+v", r)
		}
		if pttl := env.Client.PTTL(ctx, key).Val(); pttl < 50*time.Second {
			t.Fatalf("takeover lost the value's TTL: %v", pttl)
		}

		// Eventual delete marks stale and clears the owner, so the owner's fill is fenced off.
		if err := sc.run(ctx, scriptDelete, key, "eventual", ks.channel("k")).Err(); err != nil {
			t.Fatal(err)
		}
		if r := read(); !r.stale() || r.owner != "" || r.lockUntil != 0 || r.payload != "1" {
			t.Fatalf("after eventual delete = %+v", r)
		}
		fa.token = "new"
		if ok, _, _ := sc.runFill(ctx, key, fa); ok {
			t.Fatalf("a fill fenced by delete was accepted")
		}
		// Release by the owner of a value lock keeps the value; of an 'e' lock removes the key.
		seed(record{state: stateValue, lockUntil: 1 << 50, owner: "r", payload: "2"}, time.Minute)
		if err := sc.runRelease(ctx, key, "r", ks.channel("k")); err != nil {
			t.Fatal(err)
		}
		if r := read(); r.owner != "" || r.lockUntil != 0 || r.payload != "2" {
			t.Fatalf("after release = %+v", r)
		}
		seed(record{state: stateEmpty, lockUntil: 1 << 50, owner: "r"}, time.Minute)
		_ = sc.runRelease(ctx, key, "r", ks.channel("k"))
		if env.Client.Exists(ctx, key).Val() != 0 {
			t.Fatalf("released 'e' lock still exists")
		}
		// Strong delete removes the record.
		seed(record{state: stateValue, payload: "3"}, time.Minute)
		_ = sc.run(ctx, scriptDelete, key, "strong", ks.channel("k")).Err()
		if env.Client.Exists(ctx, key).Val() != 0 {
			t.Fatalf("strong delete left the record")
		}
	})
}

// TestScriptsWithoutFunctions: on a store without FUNCTION (Redis before 7, Redis-compatible
// stores) every script runs as an EVALSHA script, alone and pipelined, with the same effects.
func TestScriptsWithoutFunctions(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	rdb, counts := redistest.WithoutFunctions(t, env)
	ctx := context.Background()
	s, err := New[string, string](rdb, Config{Prefix: env.Prefix, Logger: quiet, Mode: Strong})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	load := func(_ context.Context, k string) (string, error) { return "v-" + k, nil }
	loadMany := func(_ context.Context, ks []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range ks {
			out[k] = "v-" + k
		}
		return out, nil
	}
	if v, err := s.Get(ctx, "a", load); err != nil || v != "v-a" { // acquire, fill
		t.Fatalf("Get: %q, %v", v, err)
	}
	if err := s.Set(ctx, "b", "set-b"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	got, err := s.GetMany(ctx, []string{"a", "b", "c", "d"}, loadMany) // pipelined acquires and fills
	if err != nil || got["a"] != "v-a" || got["b"] != "set-b" || got["c"] != "v-c" || got["d"] != "v-d" {
		t.Fatalf("GetMany: %v, %v", got, err)
	}
	if err := s.Delete(ctx, "a", "b", "c"); err != nil { // pipelined deletes
		t.Fatalf("Delete: %v", err)
	}
	if v, err := s.Get(ctx, "b", load); err != nil || v != "v-b" {
		t.Fatalf("Get after Delete: %q, %v (the deleted value came back?)", v, err)
	}
	if st := s.Stats(); st.Errors != 0 || st.Degraded != 0 {
		t.Fatalf("stats %+v: Redis calls failed", st)
	}
	functions, evals := counts.Counts()
	if functions != 1 || evals == 0 {
		t.Fatalf("%d FUNCTION/FCALL commands (want the one LOAD that found none), %d scripts", functions, evals)
	}
}

// TestScriptsReloaded: pipelined calls that find the library gone (a node restarted or flushed)
// load it again and run once.
func TestScriptsReloaded(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t) // its own server: the flush must not reach other tests
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	s, err := New[string, string](rdb, Config{Logger: quiet, Mode: Strong})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	loads := 0
	loadMany := func(_ context.Context, ks []string) (map[string]string, error) {
		loads++
		out := map[string]string{}
		for _, k := range ks {
			out[k] = "v-" + k
		}
		return out, nil
	}
	if _, err := s.GetMany(ctx, []string{"a", "b"}, loadMany); err != nil {
		t.Fatal(err)
	}
	if err := rdb.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a", "b"); err != nil {
		t.Fatalf("Delete after FUNCTION FLUSH: %v", err)
	}
	if err := rdb.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMany(ctx, []string{"a", "b"}, loadMany)
	if err != nil || got["a"] != "v-a" || got["b"] != "v-b" || loads != 2 {
		t.Fatalf("GetMany after FUNCTION FLUSH: %v, %v, %d loads", got, err, loads)
	}
	if st := s.Stats(); st.Errors != 0 || st.Degraded != 0 {
		t.Fatalf("stats %+v: Redis calls failed", st)
	}
}
