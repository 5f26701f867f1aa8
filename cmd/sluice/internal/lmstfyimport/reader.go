// Package lmstfyimport moves an lmstfy deployment's tenants into Sluice: it reads the namespaces,
// tokens and per-token rate limits that lmstfy keeps in its admin Redis into a Plan, which
// `sluice lmstfy import` shows (dry run) or applies.
//
// lmstfy's admin Redis layout (bitleak/lmstfy auth/token.go and throttler/throttler.go):
//
//	tk/{pool}/{namespace}   hash: token secret -> description (one hash per pool and namespace)
//	__throttler_keys__      hash: "{pool}/{namespace}/{token}" -> {"read","write","interval"}
//
// lmstfy has no namespace registry: a namespace exists through its token hash. Its counters
// (l/...) are transient and are not read. Reading never writes to the lmstfy Redis.
package lmstfyimport

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/server/tenant"
)

// DefaultPool is lmstfy's default pool (config.DefaultPoolName), the one pool Sluice has: tokens
// without a "pool:" prefix live in it.
const DefaultPool = "default"

// lmstfy's key names.
const (
	tokenKeyPrefix = "tk/"
	throttlerKey   = "__throttler_keys__"
)

// Config tells Read where lmstfy's keys are.
type Config struct {
	// Prefix is put before each of lmstfy's key names. lmstfy writes its keys without one, so the
	// default "" reads a real lmstfy admin Redis; a prefix reads a layout kept under one (a Redis
	// shared through a key-prefixing proxy, or a test's own keys).
	Prefix string
}

// Plan is what an lmstfy admin Redis holds, in Sluice's terms.
type Plan struct {
	// Namespaces that have at least one importable token, by name.
	Namespaces []string
	// Tokens to import, by namespace and then secret.
	Tokens []Token
	// Skipped lists what cannot be carried over, and why.
	Skipped []Skip
}

// Token is an lmstfy token of the default pool.
type Token struct {
	Namespace string
	// Secret is the token as lmstfy's clients send it (lmstfy stores it in plain text). It must not
	// be printed: Redacted is the form for reports.
	Secret      string
	Description string
	// Limit is the token's rate limit; nil when lmstfy has none for it.
	Limit *Limit
}

// Redacted is the token's secret as reports show it: its first four characters.
func (t Token) Redacted() string { return Redact(t.Secret) }

// Limit is an lmstfy token limit: Read consumes and Write publishes per Interval seconds (0: that
// direction is free).
type Limit struct {
	Read     int64 `json:"read"`
	Write    int64 `json:"write"`
	Interval int64 `json:"interval"`
}

// Skip is an item of the lmstfy Redis that the import leaves out.
type Skip struct {
	// What names the item: "token <ns>/<redacted>", "limit <field>" or "key <name>".
	What   string
	Reason string
}

// Redact shortens a secret for reports and logs.
func Redact(secret string) string {
	if len(secret) <= 4 {
		return "…"
	}
	return secret[:4] + "…"
}

// Read reads the tokens and limits of an lmstfy admin Redis. It fails only when Redis does;
// entries Sluice cannot take land in Plan.Skipped.
func Read(ctx context.Context, rdb redis.UniversalClient, cfg Config) (*Plan, error) {
	keys, err := scanKeys(ctx, rdb, globEscape(cfg.Prefix+tokenKeyPrefix)+"*")
	if err != nil {
		return nil, fmt.Errorf("lmstfyimport: list token hashes: %w", err)
	}
	slices.Sort(keys)
	p := &Plan{}
	byKey := map[string]int{} // "ns/secret" -> index in p.Tokens
	namespaces := map[string]bool{}
	for _, key := range keys {
		pool, ns, ok := strings.Cut(strings.TrimPrefix(key, cfg.Prefix+tokenKeyPrefix), "/")
		if !ok {
			p.skip("key "+key, "not an lmstfy token hash (want tk/{pool}/{namespace})")
			continue
		}
		tokens, err := rdb.HGetAll(ctx, key).Result()
		if err != nil {
			if isWrongType(err) {
				p.skip("key "+key, "not a hash")
				continue
			}
			return nil, fmt.Errorf("lmstfyimport: read %s: %w", key, err)
		}
		secrets := make([]string, 0, len(tokens))
		for s := range tokens {
			secrets = append(secrets, s)
		}
		slices.Sort(secrets)
		for _, secret := range secrets {
			what := "token " + ns + "/" + Redact(secret)
			switch {
			case cmp.Or(pool, DefaultPool) != DefaultPool:
				p.skip(what, "pool "+pool+": Sluice has one pool ("+DefaultPool+"); a client naming pool "+pool+" would get 404")
				continue
			case !tenant.ValidName(ns):
				p.skip(what, "namespace name must match ^[-_A-Za-z0-9]+$ and be at most 255 bytes")
				continue
			}
			byKey[ns+"/"+secret] = len(p.Tokens)
			p.Tokens = append(p.Tokens, Token{Namespace: ns, Secret: secret, Description: tokens[secret]})
			namespaces[ns] = true
		}
	}
	if err := p.readLimits(ctx, rdb, cfg.Prefix+throttlerKey, byKey); err != nil {
		return nil, err
	}
	p.Namespaces = slices.Sorted(maps.Keys(namespaces))
	return p, nil
}

// readLimits attaches the limits of __throttler_keys__ to the tokens read.
func (p *Plan) readLimits(ctx context.Context, rdb redis.UniversalClient, key string, byKey map[string]int) error {
	limits, err := rdb.HGetAll(ctx, key).Result()
	if isWrongType(err) {
		p.skip("key "+key, "not a hash")
		return nil
	}
	if err != nil {
		return fmt.Errorf("lmstfyimport: read %s: %w", key, err)
	}
	for _, field := range slices.Sorted(maps.Keys(limits)) {
		parts := strings.SplitN(field, "/", 3)
		if len(parts) != 3 {
			p.skip("limit "+field, "not {pool}/{namespace}/{token}")
			continue
		}
		pool, ns, secret := parts[0], parts[1], parts[2]
		what := "limit " + pool + "/" + ns + "/" + Redact(secret)
		i, ok := byKey[ns+"/"+secret]
		if cmp.Or(pool, DefaultPool) != DefaultPool || !ok {
			if pool == DefaultPool || pool == "" {
				p.skip(what, "no such token to import")
			} else {
				p.skip(what, "pool "+pool+": Sluice has one pool ("+DefaultPool+")")
			}
			continue
		}
		var l Limit
		if err := json.Unmarshal([]byte(limits[field]), &l); err != nil {
			p.skip(what, "not a limit: "+err.Error())
			continue
		}
		p.Tokens[i].Limit = &l
	}
	return nil
}

func (p *Plan) skip(what, reason string) {
	p.Skipped = append(p.Skipped, Skip{What: what, Reason: reason})
}

// scanKeys returns the keys matching pattern, from every master of a cluster.
func scanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var (
		mu   sync.Mutex // ForEachMaster runs the masters concurrently
		keys []string
	)
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		err = fmt.Errorf("unsupported client type %T", rdb)
	}
	return keys, err
}

// globEscape quotes the characters SCAN's MATCH treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\*?[]^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isWrongType(err error) bool {
	return err != nil && !errors.Is(err, redis.Nil) && strings.HasPrefix(err.Error(), "WRONGTYPE")
}
