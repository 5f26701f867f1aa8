package cache

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	for _, r := range []record{
		{state: stateValue, refreshAt: 1763700000123, payload: `{"a":"x|y"}`},
		{state: stateNotFound},
		{state: stateEmpty, lockUntil: 1763700000999, owner: "3k9z"},
		{state: stateValue, refreshAt: staleMark, lockUntil: 5, owner: "o", payload: "||"},
	} {
		got, ok := decodeRecord(r.encode())
		if !ok || got != r {
			t.Errorf("decode(encode(%+v)) = %+v, %v", r, got, ok)
		}
	}
	for _, bad := range []string{"", "plain value", "x|0|0||", "v|a|0||", "v|0|b||", "v|0|0|", "v0|0||"} {
		if _, ok := decodeRecord(bad); ok {
			t.Errorf("decodeRecord(%q) accepted", bad)
		}
	}
}

func TestKeySlot(t *testing.T) {
	t.Parallel()
	// Reference values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"123456789":            12739,
		"foo":                  12182,
		"{user1000}.following": keySlot("user1000"),
		"a{}b":                 keySlot("a{}b"),
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	env := redistest.NewCluster(t)
	for _, k := range []string{"sluice:cache:{42}", "x{a}y", "no-tag", "{}", "a{b"} {
		want, err := env.Client.ClusterKeySlot(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := keySlot(k); int64(got) != want {
			t.Errorf("keySlot(%q) = %d, Redis says %d", k, got, want)
		}
	}
}

func TestKeyNames(t *testing.T) {
	t.Parallel()
	ks := newKeyspace("app*1")
	if got := ks.record("user:7"); got != "app*1:cache:{user:7}" {
		t.Errorf("record = %q", got)
	}
	if got := ks.channel("user:7"); got != "app*1:cache:{user:7}:n" {
		t.Errorf("channel = %q", got)
	}
	if ks.pattern != `app\*1:cache:{*}:n` {
		t.Errorf("pattern = %q", ks.pattern)
	}
	type id int
	if keyString(42) != "42" || keyString(id(7)) != "7" || keyString("s") != "s" {
		t.Errorf("keyString")
	}
}

// Script tests: seed raw records, call the wrapper, read the raw state back.
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
