package authguard

import (
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// setup returns a guard on env with short waits and its log, adjusted by opts.
func setup(t *testing.T, env *redistest.Env, opts ...func(*Config)) (*Guard, *testio.Buffer) {
	t.Helper()
	log := &testio.Buffer{}
	cfg := Config{Redis: env.Client, Prefix: env.Prefix, FreeFailures: 3, Backoff: 100 * time.Millisecond,
		MaxBackoff: 350 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(log, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, log
}

func failed(t *testing.T, g *Guard, addr netip.Addr) time.Duration {
	t.Helper()
	wait, err := g.Failed(t.Context(), addr, Dashboard)
	if err != nil {
		t.Fatal(err)
	}
	return wait
}

// record reads a client's raw record: failures counted and the key's time to live.
func record(t *testing.T, env *redistest.Env, client string) (string, time.Duration) {
	t.Helper()
	ctx := t.Context()
	key := env.Prefix + ":authfail:{" + client + "}"
	n, _ := env.Client.HGet(ctx, key, "n").Result()
	ttl, err := env.Client.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n, ttl
}

// After the free failures each failure makes the client wait, twice as long each time up to the
// cap; failures during a wait are not counted; the record always expires.
func TestFailuresThenDoublingWaits(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		g, log := setup(t, env)
		addr := netip.MustParseAddr("192.0.2.7")
		for i := range 3 {
			if w := failed(t, g, addr); w != 0 {
				t.Fatalf("free failure %d: wait %s", i+1, w)
			}
			if g.Wait(addr, Dashboard) != 0 {
				t.Fatal("a client within its free failures is told to wait")
			}
		}
		if n, ttl := record(t, env, "192.0.2.7/32"); n != "3" || ttl <= 0 || ttl > time.Minute {
			t.Fatalf("record after 3 failures: n=%s ttl=%s, want 3 and at most a window", n, ttl)
		}
		for _, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 350 * time.Millisecond, 350 * time.Millisecond} {
			if w := failed(t, g, addr); w != want {
				t.Fatalf("wait %s, want %s", w, want)
			}
			if g.Wait(addr, Dashboard) <= 0 {
				t.Fatal("a waiting client is not told to wait")
			}
			// A failure that raced the wait (another instance did not know) is told the wait
			// left and not counted.
			n, _ := record(t, env, "192.0.2.7/32")
			if w := failed(t, g, addr); w <= 0 || w > want {
				t.Fatalf("failure during a wait of %s: wait %s", want, w)
			}
			if again, ttl := record(t, env, "192.0.2.7/32"); again != n || ttl <= want || ttl > want+time.Minute {
				t.Fatalf("during a wait: n %s -> %s (counted), ttl %s", n, again, ttl)
			}
			testwait.Until(t, time.Minute, "the wait to end", func() bool { return g.Wait(addr, Dashboard) == 0 })
		}
		if !strings.Contains(log.String(), "level=WARN msg=\"authentication failed\" kind=dashboard client_addr=192.0.2.7 failures=4 retry_after=100ms") {
			t.Fatalf("log lacks the WARN line of the first wait:\n%s", log)
		}
	})
}

// A success forgets the client's failures: a fresh allowance follows.
func TestSuccessForgets(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	g, _ := setup(t, env)
	addr := netip.MustParseAddr("192.0.2.8")
	for range 3 {
		failed(t, g, addr)
	}
	if err := g.Succeeded(t.Context(), addr); err != nil {
		t.Fatal(err)
	}
	if n, ttl := record(t, env, "192.0.2.8/32"); n != "" || ttl >= 0 {
		t.Fatalf("record after a success: n=%q ttl=%s", n, ttl)
	}
	for range 3 {
		if w := failed(t, g, addr); w != 0 {
			t.Fatalf("a failure after a success waits %s", w)
		}
	}
	// A success of a client this instance never saw fail costs nothing and changes nothing.
	if err := g.Succeeded(t.Context(), netip.MustParseAddr("192.0.2.9")); err != nil {
		t.Fatal(err)
	}
}

// An IPv6 host owns its /64: rotating through it changes nothing. An IPv4-mapped address is the
// IPv4 client.
func TestClients(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	g, _ := setup(t, env)
	for _, a := range []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9", "2001:db8:1:2::abcd%eth0"} {
		failed(t, g, netip.MustParseAddr(a))
	}
	if w := failed(t, g, netip.MustParseAddr("2001:db8:1:2:1:2:3:4")); w == 0 {
		t.Fatal("the fourth failure from one /64 did not wait")
	}
	if g.Wait(netip.MustParseAddr("2001:db8:1:3::1"), Token) != 0 {
		t.Fatal("another /64 waits too")
	}
	failed(t, g, netip.MustParseAddr("::ffff:192.0.2.10"))
	if n, _ := record(t, env, "192.0.2.10/32"); n != "1" {
		t.Fatalf("an IPv4-mapped address counted as %q", n)
	}
}

// Instances share the records: one that did not see a client's failures learns of its wait at its
// first failure from it.
func TestSharedAcrossInstances(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	a, _ := setup(t, env, func(c *Config) { c.Backoff, c.MaxBackoff = time.Minute, time.Minute })
	b, _ := setup(t, env, func(c *Config) { c.Backoff, c.MaxBackoff = time.Minute, time.Minute })
	addr := netip.MustParseAddr("198.51.100.1")
	failed(t, a, addr)
	failed(t, b, addr)
	failed(t, a, addr)
	if w := failed(t, b, addr); w != time.Minute {
		t.Fatalf("the fourth failure across two instances waits %s", w)
	}
	if a.Wait(addr, Admin) != 0 {
		t.Fatal("the instance that did not answer the wait knows of it before a failure")
	}
	if w := failed(t, a, addr); w <= 0 || a.Wait(addr, Admin) <= 0 {
		t.Fatalf("the other instance's failure during the wait: %s", w)
	}
	if n, _ := record(t, env, "198.51.100.1/32"); n != "4" {
		t.Fatalf("failures counted %s, want 4", n)
	}
}

// The fail script counts a call sent twice once (a client library resends after a timeout).
func TestFailScriptCountsARepeatOnce(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	g, _ := setup(t, env)
	key := recordKey(env.Prefix, netip.MustParsePrefix("203.0.113.0/32"))
	if err := env.Client.HSet(t.Context(), key, "n", 3, "call", "old").Err(); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.PExpire(t.Context(), key, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	run := func(id string) []int64 {
		t.Helper()
		res, err := g.scripts.Run(t.Context(), "fail", []string{key}, id, 3, 60000, 1000, 60000).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := run("c1")
	if first[0] != 4 || first[1] != 1000 {
		t.Fatalf("first call: %v, want [4 1000]", first)
	}
	again := run("c1")
	if again[0] != 4 || again[1] <= 0 || again[1] > 1000 {
		t.Fatalf("the repeat: %v, want 4 failures and the wait left", again)
	}
	if n, _ := record(t, env, "203.0.113.0/32"); n != "4" {
		t.Fatalf("failures after a repeat: %s", n)
	}
}

// Past its budget an instance answers failures with a wait at once, recording nothing, and says so
// once a second in its log.
func TestBudget(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	g, log := setup(t, env, func(c *Config) { c.MaxFailuresPerSecond = 2 })
	clock := time.Unix(1_700_000_000, 0)
	g.now = func() time.Time { return clock }
	var refused int
	g.cfg.OnRefused = func(Kind) { refused++ }
	for i, a := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"} {
		want := time.Duration(0)
		if i >= 2 {
			want = time.Second
		}
		if w := failed(t, g, netip.MustParseAddr(a)); w != want {
			t.Fatalf("failure %d of the second: wait %s, want %s", i+1, w, want)
		}
	}
	if n, _ := record(t, env, "192.0.2.3/32"); n != "" {
		t.Fatalf("a failure past the budget was recorded: %q", n)
	}
	if refused != 2 || strings.Count(log.String(), "refused unrecorded") != 1 {
		t.Fatalf("refused %d, log:\n%s", refused, log)
	}
	clock = clock.Add(time.Second)
	if w := failed(t, g, netip.MustParseAddr("192.0.2.3")); w != 0 {
		t.Fatalf("the next second's first failure waits %s", w)
	}
}

// A full memory of clients forgets what ended first; Redis still knows every record.
func TestMemoryIsBounded(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	g, _ := setup(t, env)
	clock := time.Now()
	g.now = func() time.Time { return clock }
	for i := range maxRemembered {
		g.remember(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32), 0)
	}
	clock = clock.Add(2 * time.Minute) // every one of them is past its window
	g.remember(netip.MustParsePrefix("192.0.2.1/32"), time.Minute)
	g.mu.RLock()
	n := len(g.clients)
	g.mu.RUnlock()
	if n != 1 {
		t.Fatalf("memory holds %d clients, want the one that has not ended", n)
	}
	if g.Wait(netip.MustParseAddr("192.0.2.1"), Token) <= 0 {
		t.Fatal("the remembered wait is gone")
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	for _, c := range []Config{
		{},
		{Redis: env.Client, FreeFailures: -1},
		{Redis: env.Client, Window: time.Millisecond},
		{Redis: env.Client, Backoff: time.Minute, MaxBackoff: time.Second},
		{Redis: env.Client, MaxFailuresPerSecond: -1},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if _, err := New(Config{Redis: env.Client}); err != nil {
		t.Fatal(err)
	}
}
