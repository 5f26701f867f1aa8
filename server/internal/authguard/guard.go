// Package authguard limits failed authentications per client, across every server instance that
// shares the Redis: after FreeFailures wrong credentials within Window, each further one makes
// the client wait, twice as long as the last time (Backoff, doubling, at most MaxBackoff), and
// while it waits the server answers 429 without checking what it sends. A success forgets the
// client's failures. The server guards with it the dashboard's login, the admin token (bearer or
// Basic) and namespace tokens (docs/server.md, "Failed authentications").
//
// A client is an IPv4 address or an IPv6 /64 (a host usually owns a whole /64, so counting its
// addresses one by one would give it billions of fresh starts). Its record in Redis is one small
// hash that expires a window after its last failure (or its wait), changed by one script.
//
// The hot path costs nothing: a request whose credential is right touches Redis only when this
// instance saw a failure of its client (to forget it), and the check before a credential is read
// is a look-up in this instance's memory of the waits it answered. So another instance learns of a
// wait at its first failure from that client (answered with the wait left), and a success on an
// instance that saw no failure leaves the count to expire with its window.
//
// Memory is bounded twice. Each instance examines at most MaxFailuresPerSecond failures a second
// (recorded in Redis, logged): past that, failures are answered 429 at once, untouched, so a flood
// from rotating addresses makes at most that many records a second per instance, each gone a
// window later. And the instance's memory of waits holds at most maxRemembered clients.
package authguard

import (
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// Kind is what a failed authentication tried: a metric label and a log attribute.
type Kind string

// The kinds of credentials the server guards.
const (
	Dashboard Kind = "dashboard" // the dashboard's login form
	Admin     Kind = "admin"     // the admin token as a bearer token or Basic password
	Token     Kind = "token"     // a namespace token (native and lmstfy-compatible APIs)
)

//go:embed lua/*.lua
var luaFiles embed.FS

// library is the guard's one script, lua/fail.lua (redisx.Library, as in every package).
var library = redisx.NewLibraryFromFiles(luaFiles, redisx.LibrarySpec{
	Name:    "sluice_authguard",
	Scripts: []redisx.LibraryScript{{Name: "fail"}},
})

// Config configures a Guard.
type Config struct {
	// Redis keeps the failure records. Required.
	Redis redis.UniversalClient
	// Prefix starts the records' keys, like every key Sluice writes. Default "sluice".
	Prefix string
	// FreeFailures is how many failures a client may make within Window before it must wait.
	// Default 10.
	FreeFailures int
	// Window is the span FreeFailures are counted over, from a client's first failure. Default 1m.
	Window time.Duration
	// Backoff is the first wait; each further failure doubles it. Default 1s.
	Backoff time.Duration
	// MaxBackoff caps a wait. Default 15m.
	MaxBackoff time.Duration
	// MaxFailuresPerSecond is how many failures this instance records (and logs) a second; past
	// it, failures are answered 429 for a second without a Redis call. Default 100.
	MaxFailuresPerSecond int
	// Logger gets a WARN line for each failure recorded. Default slog.Default().
	Logger *slog.Logger
	// OnFailure, when set, is called for every failed authentication (for metrics).
	OnFailure func(Kind)
	// OnRefused, when set, is called for every request answered 429 (for metrics).
	OnRefused func(Kind)
}

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, "sluice")
	c.FreeFailures = cmp.Or(c.FreeFailures, 10)
	c.Window = cmp.Or(c.Window, time.Minute)
	c.Backoff = cmp.Or(c.Backoff, time.Second)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, 15*time.Minute)
	c.MaxFailuresPerSecond = cmp.Or(c.MaxFailuresPerSecond, 100)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case c.Redis == nil:
		return errors.New("authguard: Config.Redis is required")
	case c.FreeFailures < 1:
		return errors.New("authguard: Config.FreeFailures must be at least 1")
	case c.Window < time.Second:
		return errors.New("authguard: Config.Window must be at least 1s")
	case c.Backoff < time.Millisecond || c.MaxBackoff < c.Backoff:
		return errors.New("authguard: Config.Backoff must be at least 1ms and MaxBackoff at least Backoff")
	case c.MaxFailuresPerSecond < 1:
		return errors.New("authguard: Config.MaxFailuresPerSecond must be at least 1")
	}
	return nil
}

// maxRemembered bounds the clients an instance remembers failures of; a full memory drops what
// has ended, then everything (Redis still holds every record: a client forgotten here is
// refused again at its next failure).
const maxRemembered = 10_000

// Guard counts failed authentications and says which clients must wait.
type Guard struct {
	cfg     Config
	scripts *redisx.ScriptRunner
	now     func() time.Time // the budget's and the memory's clock (tests set it)

	// seen is this instance's memory of the clients it recorded failures of: nonzero while the
	// map is not empty, so the hot path skips the lock when nobody failed.
	seen     atomic.Bool
	mu       sync.RWMutex
	clients  map[netip.Prefix]remembered
	second   int64 // the Unix second the budget counts
	examined int   // failures recorded in that second
	skipped  int   // failures refused unrecorded in that second
}

// remembered is what an instance knows of a client: when its wait ends, and when its record in
// Redis expires at the latest.
type remembered struct {
	waitUntil, forget time.Time
}

// New returns a Guard.
func New(cfg Config) (*Guard, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Guard{
		cfg:     cfg,
		scripts: redisx.NewScriptRunner(library, cfg.Redis, cfg.Logger, "authguard"),
		clients: make(map[netip.Prefix]remembered),
		now:     time.Now,
	}, nil
}

// clientOf is the client a failure counts against: the IPv4 address, or the IPv6 /64.
func clientOf(addr netip.Addr) netip.Prefix {
	addr = addr.Unmap()
	if addr.Is4() {
		return netip.PrefixFrom(addr, 32)
	}
	p, _ := addr.WithZone("").Prefix(64)
	return p
}

// Wait reports how long addr's client must still wait before its credentials are checked (0:
// check them), as far as this instance knows. A request told to wait is answered 429 with the
// wait as Retry-After. It costs no Redis call.
func (g *Guard) Wait(addr netip.Addr, kind Kind) time.Duration {
	if !g.seen.Load() {
		return 0
	}
	now := g.now()
	g.mu.RLock()
	e, ok := g.clients[clientOf(addr)]
	g.mu.RUnlock()
	if !ok || !now.Before(e.waitUntil) {
		return 0
	}
	g.refused(kind)
	return e.waitUntil.Sub(now)
}

// Failed records a wrong credential of kind from addr and returns how long its client must now
// wait: 0 means answer the failure as usual (401), more means answer 429 with that Retry-After.
// An error means the failure could not be recorded (Redis unreachable).
func (g *Guard) Failed(ctx context.Context, addr netip.Addr, kind Kind) (time.Duration, error) {
	if g.cfg.OnFailure != nil {
		g.cfg.OnFailure(kind)
	}
	if !g.examine() {
		g.refused(kind)
		return time.Second, nil
	}
	client := clientOf(addr)
	var id [8]byte
	_, _ = rand.Read(id[:])
	res, err := g.scripts.Run(ctx, "fail", []string{recordKey(g.cfg.Prefix, client)}, hex.EncodeToString(id[:]),
		g.cfg.FreeFailures, g.cfg.Window.Milliseconds(), g.cfg.Backoff.Milliseconds(), g.cfg.MaxBackoff.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("authguard: %w", err)
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("authguard: fail answered %v", res)
	}
	failures, wait := res[0], time.Duration(res[1])*time.Millisecond
	g.remember(client, wait)
	g.cfg.Logger.WarnContext(ctx, "authentication failed", "kind", string(kind), "client_addr", addr.String(),
		"failures", failures, "retry_after", wait.String())
	if wait > 0 {
		g.refused(kind)
	}
	return wait, nil
}

// Succeeded forgets the failures of addr's client when this instance saw some (a success elsewhere
// leaves them to expire with their window). It returns the error of the Redis call, if it made
// one; the caller may ignore it: the record expires anyway.
func (g *Guard) Succeeded(ctx context.Context, addr netip.Addr) error {
	if !g.seen.Load() {
		return nil
	}
	client := clientOf(addr)
	g.mu.RLock()
	_, ok := g.clients[client]
	g.mu.RUnlock()
	if !ok {
		return nil
	}
	g.mu.Lock()
	delete(g.clients, client)
	g.seen.Store(len(g.clients) > 0)
	g.mu.Unlock()
	if err := g.cfg.Redis.Del(ctx, recordKey(g.cfg.Prefix, client)).Err(); err != nil {
		return fmt.Errorf("authguard: %w", err)
	}
	return nil
}

// remember keeps what a recorded failure answered about client.
func (g *Guard) remember(client netip.Prefix, wait time.Duration) {
	now := g.now()
	e := remembered{waitUntil: now.Add(wait), forget: now.Add(wait + g.cfg.Window)}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.clients[client]; !ok && len(g.clients) >= maxRemembered {
		for c, old := range g.clients {
			if now.After(old.forget) {
				delete(g.clients, c)
			}
		}
		if len(g.clients) >= maxRemembered {
			clear(g.clients)
		}
	}
	g.clients[client] = e
	g.seen.Store(true)
}

// examine reports whether this instance may record one more failure this second. The first
// failure of a second past the budget is logged (the metrics count every one).
func (g *Guard) examine() bool {
	now := g.now().Unix()
	g.mu.Lock()
	if now != g.second {
		g.second, g.examined, g.skipped = now, 0, 0
	}
	ok := g.examined < g.cfg.MaxFailuresPerSecond
	if ok {
		g.examined++
	} else {
		g.skipped++
	}
	first := g.skipped == 1 && !ok
	g.mu.Unlock()
	if first {
		g.cfg.Logger.Warn("more failed authentications this second than this instance records: the rest are refused unrecorded",
			"budget_per_second", g.cfg.MaxFailuresPerSecond)
	}
	return ok
}

func (g *Guard) refused(kind Kind) {
	if g.cfg.OnRefused != nil {
		g.cfg.OnRefused(kind)
	}
}
