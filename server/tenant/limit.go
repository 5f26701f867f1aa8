package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/ratelimit"
)

// Per-token rate limits. A token may carry a limit, in lmstfy's shape: at most Read consume
// requests and Write publish requests per Interval seconds. Both admin APIs (the native
// /v1/namespaces/{ns}/tokens/{id}/limit and lmstfy's /token/{ns}/{token}/limit) read and write the
// same Redis hash, and both public APIs enforce it. Each token direction is its own GCRA key of
// package ratelimit, so no two tokens ever share state. A request costs 1 whatever its number of
// jobs, as in lmstfy; a request that fails (or a consume that gets no job) is refunded. Spend and
// Charge are the request path; the HTTP side (headers, 429 shapes, refunds) is the server's.

// Limit is a token's rate limit: at most Read consumes and Write publishes per Interval
// seconds (0 leaves that direction unlimited). Its JSON is lmstfy's.
type Limit struct {
	Read     int64 `json:"read"`
	Write    int64 `json:"write"`
	Interval int64 `json:"interval"`
}

// maxLimitProduct bounds read×interval and write×interval: the limiter keeps a key's state in
// whole microseconds below 2^53.
const maxLimitProduct = (1 << 53) / int64(time.Second/time.Microsecond)

// Problem returns the field at fault and lmstfy's message for a bad limit ("" when it is good).
func (l Limit) Problem() (field, msg string) {
	switch {
	case l.Read < 0:
		return "read", "read and write should be >= 0"
	case l.Write < 0:
		return "write", "read and write should be >= 0"
	case l.Read == 0 && l.Write == 0:
		return "read", "the read and write of limiter can't be 0 at the same time"
	case l.Interval <= 0:
		return "interval", "interval should be > 0"
	case l.Interval > maxLimitProduct/max(l.Read, l.Write):
		return "interval", fmt.Sprintf("read and write × interval should be <= %d", maxLimitProduct)
	}
	return "", ""
}

// LimitDir is the direction of a job request a limit counts: read (consume) or write (publish).
// The zero value, LimitNone, is a request no limit counts.
type LimitDir int

// The directions of requests.
const (
	LimitNone LimitDir = iota
	LimitRead
	LimitWrite
)

func (d LimitDir) String() string {
	switch d {
	case LimitRead:
		return "read"
	case LimitWrite:
		return "write"
	}
	return "none"
}

// Action is lmstfy's name of the direction in its 429 message.
func (d LimitDir) Action() string {
	if d == LimitRead {
		return "consume"
	}
	return "produce"
}

// OKStatus is the status of a successful request of the direction on both APIs (consume 200,
// publish 201); any other answer is refunded.
func (d LimitDir) OKStatus() int {
	if d == LimitRead {
		return http.StatusOK
	}
	return http.StatusCreated
}

// Rate is the direction's events per interval (0: unlimited).
func (l Limit) Rate(d LimitDir) int64 {
	if d == LimitRead {
		return l.Read
	}
	return l.Write
}

// LimitEntry is one token's limit in a listing.
type LimitEntry struct {
	Namespace string
	ID        string
	Limit     Limit
}

// LimitStore keeps the tokens' limits in one Redis hash (field "namespace/token id", value the
// limit's JSON), caches lookups in-process for at most ttl (so a change applies on every instance
// within it), and holds one ratelimit.Limiter per distinct direction and rate.
type LimitStore struct {
	rdb    redis.UniversalClient
	prefix string
	key    string
	log    *slog.Logger
	cache  *lookupCache[Limit] // "namespace/token id" -> limit

	mu       sync.Mutex
	limiters map[limiterSpec]*ratelimit.Limiter
}

// limiterSpec names the Limiter of one direction and rate.
type limiterSpec struct {
	dir            LimitDir
	rate, interval int64
}

// maxLimiters bounds the Limiters kept (one per distinct rate in use); a full map is emptied.
// Limiters hold no state of their own that matters: it lives in Redis.
const maxLimiters = 1000

// NewLimitStore returns the limit store under prefix; lookups are cached for ttl.
func NewLimitStore(rdb redis.UniversalClient, prefix string, ttl time.Duration, log *slog.Logger) *LimitStore {
	return &LimitStore{
		rdb:      rdb,
		prefix:   prefix,
		key:      newKeys(prefix).limits,
		log:      log,
		cache:    newLookupCache[Limit](ttl),
		limiters: make(map[limiterSpec]*ratelimit.Limiter),
	}
}

// Get reads a token's limit from Redis (no cache); found is false when it has none.
func (s *LimitStore) Get(ctx context.Context, ns, id string) (Limit, bool, error) {
	return readRecord[Limit](ctx, s.rdb, s.key, limitField(ns, id), "limit")
}

// Lookup is Get through the in-process cache, for the request path.
func (s *LimitStore) Lookup(ctx context.Context, tok Token) (Limit, bool, error) {
	return s.cache.lookup(limitField(tok.Namespace, tok.ID), func() (Limit, bool, error) {
		return s.Get(ctx, tok.Namespace, tok.ID)
	})
}

// Set stores a token's limit; without replace it only adds one the token has not got, and added
// says whether it did.
func (s *LimitStore) Set(ctx context.Context, ns, id string, l Limit, replace bool) (added bool, err error) {
	b, err := json.Marshal(l)
	if err != nil {
		return false, fmt.Errorf("limit: %w", err)
	}
	field := limitField(ns, id)
	if replace {
		err = s.rdb.HSet(ctx, s.key, field, b).Err()
		added = err == nil
	} else {
		added, err = s.rdb.HSetNX(ctx, s.key, field, b).Result()
	}
	if err != nil {
		return false, fmt.Errorf("limit: set: %w", err)
	}
	s.cache.forget(field)
	return added, nil
}

// Remove drops the limits of tokens of ns (those it has).
func (s *LimitStore) Remove(ctx context.Context, ns string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	fields := make([]string, len(ids))
	for i, id := range ids {
		fields[i] = limitField(ns, id)
	}
	if err := s.rdb.HDel(ctx, s.key, fields...).Err(); err != nil {
		return fmt.Errorf("limit: delete: %w", err)
	}
	s.cache.forget(fields...)
	return nil
}

// RemoveNamespace drops the limits of every token of ns.
func (s *LimitStore) RemoveNamespace(ctx context.Context, ns string) error {
	fields, err := s.rdb.HKeys(ctx, s.key).Result()
	if err != nil {
		return fmt.Errorf("limit: list: %w", err)
	}
	var ids []string
	for _, f := range fields {
		if id, ok := strings.CutPrefix(f, ns+"/"); ok {
			ids = append(ids, id)
		}
	}
	return s.Remove(ctx, ns, ids...)
}

// List returns every limit, by namespace and token id.
func (s *LimitStore) List(ctx context.Context) ([]LimitEntry, error) {
	all, err := s.rdb.HGetAll(ctx, s.key).Result()
	if err != nil {
		return nil, fmt.Errorf("limit: list: %w", err)
	}
	out := make([]LimitEntry, 0, len(all))
	for field, raw := range all {
		ns, id, ok := strings.Cut(field, "/")
		var l Limit
		if !ok || json.Unmarshal([]byte(raw), &l) != nil {
			continue
		}
		out = append(out, LimitEntry{Namespace: ns, ID: id, Limit: l})
	}
	slices.SortFunc(out, func(a, b LimitEntry) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// limiter returns the Limiter of a direction and rate, made on first use. Its name carries the
// rate ("token_write_100_10": 100 per 10 s), so a changed limit starts from a full bucket rather
// than from a state the old rate left (a GCRA state of 1 per minute would hold a new limit of
// 1000 per second back for a minute); the old state expires by itself.
func (s *LimitStore) limiter(spec limiterSpec) (*ratelimit.Limiter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.limiters[spec]; ok {
		return l, nil
	}
	l, err := ratelimit.New(s.rdb, ratelimit.Config{
		Limit: ratelimit.Limit{
			Rate:   int(spec.rate),
			Period: time.Duration(spec.interval) * time.Second,
			Burst:  int(spec.rate),
		},
		Prefix: s.prefix,
		Name:   fmt.Sprintf("token_%s_%d_%d", spec.dir, spec.rate, spec.interval),
		Logger: s.log,
	})
	if err != nil {
		return nil, err
	}
	if len(s.limiters) >= maxLimiters {
		clear(s.limiters)
	}
	s.limiters[spec] = l
	return l, nil
}

// Charge is one request counted against a token's limit; Refund gives it back once.
type Charge struct {
	lim      *ratelimit.Limiter
	key      string
	refunded bool
}

// Refund gives the request back (once; later calls and a nil Charge do nothing). It runs on a
// context detached from the request, so a client that went away still gets its request back.
func (c *Charge) Refund(ctx context.Context) error {
	if c == nil || c.refunded {
		return nil
	}
	c.refunded = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := c.lim.Refund(ctx, c.key, 1); err != nil {
		return fmt.Errorf("limit: refund %s: %w", c.key, err)
	}
	return nil
}

// Key is the limiter key the charge counts against ("namespace/token id").
func (c *Charge) Key() string { return c.key }

// Spent is the outcome of Spend: no limit (Charge nil, Denied false), a Charge, or a denial.
// Result and Limit are set whenever the token has a limit in the direction.
type Spent struct {
	Charge *Charge
	Denied bool
	Result ratelimit.Result
	Limit  Limit
	// Limited reports whether the token has a limit in the direction (the RateLimit-* headers
	// are then due).
	Limited bool
}

// Spend counts one request of dir against tok's limit. A token without a limit in dir (or with
// a bad record, never written by this server) is not counted.
func (s *LimitStore) Spend(ctx context.Context, tok Token, dir LimitDir) (Spent, error) {
	l, found, err := s.Lookup(ctx, tok)
	if err != nil || !found || l.Rate(dir) == 0 {
		return Spent{}, err
	}
	if field, _ := l.Problem(); field != "" {
		return Spent{}, nil
	}
	lim, err := s.limiter(limiterSpec{dir: dir, rate: l.Rate(dir), interval: l.Interval})
	if err != nil {
		return Spent{}, err
	}
	key := limitField(tok.Namespace, tok.ID)
	res, err := lim.Allow(ctx, key)
	if err != nil {
		return Spent{}, err
	}
	if !res.Allowed {
		return Spent{Denied: true, Result: res, Limit: l, Limited: true}, nil
	}
	return Spent{Charge: &Charge{lim: lim, key: key}, Result: res, Limit: l, Limited: true}, nil
}
