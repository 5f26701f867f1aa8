package cache

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestScripts(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		sc := newScripts()
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
		res, err := sc.runAcquire(ctx, env.Client, key, "me", 60000)
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
		if res, _ := sc.runAcquire(ctx, env.Client, key, "other", 60000); res.code != acqLocked || res.rec.owner != "me" {
			t.Fatalf("acquire on locked = %+v", res)
		}
		// A fill by a stranger is refused; by the owner, accepted, with the lock cleared.
		fa := fillArgs{token: "other", state: stateValue, payload: []byte(`"x"`), ttlms: 60000, channel: ks.channel("k")}
		if ok, _, _ := sc.runFill(ctx, env.Client, key, fa); ok {
			t.Fatalf("a stranger's fill was accepted")
		}
		fa.token, fa.afterms = "me", 10000
		ok, now, err := sc.runFill(ctx, env.Client, key, fa)
		if err != nil || !ok {
			t.Fatalf("owner's fill = %v, %v", ok, err)
		}
		if r := read(); r.state != stateValue || r.payload != `"x"` || r.owner != "" || r.lockUntil != 0 || r.refreshAt != now+10000 {
			t.Fatalf("filled record = %+v", r)
		}
		// A fresh value: acquire reports it and changes nothing.
		if res, _ := sc.runAcquire(ctx, env.Client, key, "me2", 1000); res.code != acqFresh || res.rec.payload != `"x"` {
			t.Fatalf("acquire on fresh = %+v", res)
		}

		// An expired lock is taken over, keeping the value and its TTL.
		seed(record{state: stateValue, lockUntil: 1, owner: "dead", payload: "1", refreshAt: 2}, time.Minute)
		if res, _ := sc.runAcquire(ctx, env.Client, key, "new", 1000); res.code != acqAcquired || res.rec.payload != "1" {
			t.Fatalf("takeover = %+v", res)
		}
		if r := read(); r.owner != "new" || r.payload != "1" {
			t.Fatalf("after takeover = %+v", r)
		}
		if pttl := env.Client.PTTL(ctx, key).Val(); pttl < 50*time.Second {
			t.Fatalf("takeover lost the value's TTL: %v", pttl)
		}

		// Eventual delete marks stale and clears the owner, so the owner's fill is fenced off.
		if err := sc.delete.Run(ctx, env.Client, []string{key}, "eventual", ks.channel("k")).Err(); err != nil {
			t.Fatal(err)
		}
		if r := read(); !r.stale() || r.owner != "" || r.lockUntil != 0 || r.payload != "1" {
			t.Fatalf("after eventual delete = %+v", r)
		}
		fa.token = "new"
		if ok, _, _ := sc.runFill(ctx, env.Client, key, fa); ok {
			t.Fatalf("a fill fenced by delete was accepted")
		}
		// Release by the owner of a value lock keeps the value; of an 'e' lock removes the key.
		seed(record{state: stateValue, lockUntil: 1 << 50, owner: "r", payload: "2"}, time.Minute)
		if err := sc.runRelease(ctx, env.Client, key, "r", ks.channel("k")); err != nil {
			t.Fatal(err)
		}
		if r := read(); r.owner != "" || r.lockUntil != 0 || r.payload != "2" {
			t.Fatalf("after release = %+v", r)
		}
		seed(record{state: stateEmpty, lockUntil: 1 << 50, owner: "r"}, time.Minute)
		_ = sc.runRelease(ctx, env.Client, key, "r", ks.channel("k"))
		if env.Client.Exists(ctx, key).Val() != 0 {
			t.Fatalf("released 'e' lock still exists")
		}
		// Strong delete removes the record.
		seed(record{state: stateValue, payload: "3"}, time.Minute)
		_ = sc.delete.Run(ctx, env.Client, []string{key}, "strong", ks.channel("k")).Err()
		if env.Client.Exists(ctx, key).Val() != 0 {
			t.Fatalf("strong delete left the record")
		}
	})
}
