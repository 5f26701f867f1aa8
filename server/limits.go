package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
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
// jobs, as in lmstfy; a request that fails (or a consume that gets no job) is refunded.

// tokenLimit is a token's rate limit: at most Read consumes and Write publishes per Interval
// seconds (0 leaves that direction unlimited). Its JSON is lmstfy's.
type tokenLimit struct {
	Read     int64 `json:"read"`
	Write    int64 `json:"write"`
	Interval int64 `json:"interval"`
}

// maxLimitProduct bounds read×interval and write×interval: the limiter keeps a key's state in
// whole microseconds below 2^53.
const maxLimitProduct = (1 << 53) / int64(time.Second/time.Microsecond)

// problem returns the field at fault and lmstfy's message for a bad limit ("" when it is good).
func (l tokenLimit) problem() (field, msg string) {
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

// limitDir is the direction of a job request a limit counts: read (consume) or write (publish).
type limitDir int

const (
	limitRead limitDir = iota
	limitWrite
)

func (d limitDir) String() string {
	if d == limitRead {
		return "read"
	}
	return "write"
}

// action is lmstfy's name of the direction in its 429 message.
func (d limitDir) action() string {
	if d == limitRead {
		return "consume"
	}
	return "produce"
}

// okStatus is the status of a successful request of the direction on both APIs (consume 200,
// publish 201); any other answer is refunded.
func (d limitDir) okStatus() int {
	if d == limitRead {
		return http.StatusOK
	}
	return http.StatusCreated
}

// rate is the direction's events per interval (0: unlimited).
func (l tokenLimit) rate(d limitDir) int64 {
	if d == limitRead {
		return l.Read
	}
	return l.Write
}

// tokenLimitEntry is one token's limit in a listing.
type tokenLimitEntry struct {
	Namespace string
	ID        string
	Limit     tokenLimit
}

// limitStore keeps the tokens' limits in one Redis hash (field "namespace/token id", value the
// limit's JSON), caches lookups in-process for at most ttl (so a change applies on every instance
// within it), and holds one ratelimit.Limiter per distinct direction and rate.
type limitStore struct {
	rdb    redis.UniversalClient
	prefix string
	key    string
	ttl    time.Duration
	log    *slog.Logger
	now    func() time.Time

	mu       sync.Mutex
	cache    map[string]cachedLimit
	limiters map[limiterSpec]*ratelimit.Limiter
}

type cachedLimit struct {
	limit   tokenLimit
	found   bool
	expires time.Time
}

// limiterSpec names the Limiter of one direction and rate.
type limiterSpec struct {
	dir            limitDir
	rate, interval int64
}

// maxLimiters bounds the Limiters kept (one per distinct rate in use); a full map is emptied.
// Limiters hold no state of their own that matters: it lives in Redis.
const maxLimiters = 1000

func newLimitStore(rdb redis.UniversalClient, prefix string, ttl time.Duration, log *slog.Logger) *limitStore {
	return &limitStore{
		rdb:      rdb,
		prefix:   prefix,
		key:      prefix + ":auth:limits",
		ttl:      ttl,
		log:      log,
		now:      time.Now,
		cache:    make(map[string]cachedLimit),
		limiters: make(map[limiterSpec]*ratelimit.Limiter),
	}
}

func limitField(ns, id string) string { return ns + "/" + id }

// get reads a token's limit from Redis (no cache); found is false when it has none.
func (s *limitStore) get(ctx context.Context, ns, id string) (tokenLimit, bool, error) {
	b, err := s.rdb.HGet(ctx, s.key, limitField(ns, id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return tokenLimit{}, false, nil
	}
	if err != nil {
		return tokenLimit{}, false, fmt.Errorf("limit: lookup: %w", err)
	}
	var l tokenLimit
	if err := json.Unmarshal(b, &l); err != nil {
		return tokenLimit{}, false, fmt.Errorf("limit: bad record %s/%s: %w", ns, id, err)
	}
	return l, true, nil
}

// lookup is get through the in-process cache, for the request path.
func (s *limitStore) lookup(ctx context.Context, tok Token) (tokenLimit, bool, error) {
	field := limitField(tok.Namespace, tok.ID)
	now := s.now()
	s.mu.Lock()
	c, ok := s.cache[field]
	s.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.limit, c.found, nil
	}
	l, found, err := s.get(ctx, tok.Namespace, tok.ID)
	if err != nil {
		return tokenLimit{}, false, err
	}
	if s.ttl > 0 {
		s.mu.Lock()
		if len(s.cache) >= maxCachedTokens {
			clear(s.cache)
		}
		s.cache[field] = cachedLimit{limit: l, found: found, expires: now.Add(s.ttl)}
		s.mu.Unlock()
	}
	return l, found, nil
}

// set stores a token's limit; without replace it only adds one the token has not got, and added
// says whether it did.
func (s *limitStore) set(ctx context.Context, ns, id string, l tokenLimit, replace bool) (added bool, err error) {
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
	s.forget(field)
	return added, nil
}

// remove drops the limits of tokens of ns (those it has).
func (s *limitStore) remove(ctx context.Context, ns string, ids ...string) error {
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
	s.forget(fields...)
	return nil
}

// removeNamespace drops the limits of every token of ns.
func (s *limitStore) removeNamespace(ctx context.Context, ns string) error {
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
	return s.remove(ctx, ns, ids...)
}

// list returns every limit, by namespace and token id.
func (s *limitStore) list(ctx context.Context) ([]tokenLimitEntry, error) {
	all, err := s.rdb.HGetAll(ctx, s.key).Result()
	if err != nil {
		return nil, fmt.Errorf("limit: list: %w", err)
	}
	out := make([]tokenLimitEntry, 0, len(all))
	for field, raw := range all {
		ns, id, ok := strings.Cut(field, "/")
		var l tokenLimit
		if !ok || json.Unmarshal([]byte(raw), &l) != nil {
			continue
		}
		out = append(out, tokenLimitEntry{Namespace: ns, ID: id, Limit: l})
	}
	slices.SortFunc(out, func(a, b tokenLimitEntry) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// forget drops cached lookups, so a change made here applies here at once.
func (s *limitStore) forget(fields ...string) {
	s.mu.Lock()
	for _, f := range fields {
		delete(s.cache, f)
	}
	s.mu.Unlock()
}

// limiter returns the Limiter of a direction and rate, made on first use. Its name carries the
// rate ("token_write_100_10": 100 per 10 s), so a changed limit starts from a full bucket rather
// than from a state the old rate left (a GCRA state of 1 per minute would hold a new limit of
// 1000 per second back for a minute); the old state expires by itself.
func (s *limitStore) limiter(spec limiterSpec) (*ratelimit.Limiter, error) {
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

// charge is one request counted against a token's limit; refund gives it back once.
type charge struct {
	lim      *ratelimit.Limiter
	key      string
	log      *slog.Logger
	refunded bool
}

// refund gives the request back (once). It runs on a context detached from the request, so a
// client that went away still gets its request back.
func (c *charge) refund(ctx context.Context) {
	if c == nil || c.refunded {
		return
	}
	c.refunded = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := c.lim.Refund(ctx, c.key, 1); err != nil {
		c.log.WarnContext(ctx, "could not refund a rate-limited request", "key", c.key, "error", err,
			"request_id", requestID(ctx))
	}
}

type chargeKey struct{}

// refundRequest gives back the request's charge, for a handler whose request did not do what the
// limit counts although it succeeds (a consume that got no job). No-op without a charge.
func refundRequest(ctx context.Context) {
	if c, ok := ctx.Value(chargeKey{}).(*charge); ok {
		c.refund(ctx)
	}
}

// spent is the outcome of spend: no limit (charge nil, denied false), a charge, or a denial.
type spent struct {
	charge *charge
	denied bool
	res    ratelimit.Result
	limit  tokenLimit
}

// spend counts one request of dir against tok's limit and sets the RateLimit-* headers when the
// token has a limit in that direction.
func (s *Server) spend(w http.ResponseWriter, r *http.Request, tok Token, dir limitDir) (spent, error) {
	l, found, err := s.limits.lookup(r.Context(), tok)
	if err != nil || !found || l.rate(dir) == 0 {
		return spent{}, err
	}
	if field, _ := l.problem(); field != "" {
		return spent{}, nil // a bad record (never written by this server): no limit
	}
	lim, err := s.limits.limiter(limiterSpec{dir: dir, rate: l.rate(dir), interval: l.Interval})
	if err != nil {
		return spent{}, err
	}
	key := limitField(tok.Namespace, tok.ID)
	res, err := lim.Allow(r.Context(), key)
	if err != nil {
		return spent{}, err
	}
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(res.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(res.Remaining))
	h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(res.ResetAfter), 10))
	if !res.Allowed {
		s.metrics.rateLimited.WithLabelValues(tok.Namespace, dir.String()).Inc()
		h.Set("Retry-After", strconv.FormatInt(max(ceilSeconds(res.RetryAfter), 1), 10))
		return spent{denied: true, res: res, limit: l}, nil
	}
	return spent{charge: &charge{lim: lim, key: key, log: s.log}, res: res, limit: l}, nil
}

func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// limited charges a native job request to the token's limit in dir: 429 rate_limited with
// Retry-After when the limit is reached; a request that fails is refunded.
func (s *Server) limited(dir limitDir, f func(w http.ResponseWriter, r *http.Request, tok Token) error) func(w http.ResponseWriter, r *http.Request, tok Token) error {
	return func(w http.ResponseWriter, r *http.Request, tok Token) error {
		sp, err := s.spend(w, r, tok, dir)
		switch {
		case err != nil:
			return err
		case sp.denied:
			return &Error{
				Code: CodeRateLimited, RetryAfter: sp.res.RetryAfter,
				Message: fmt.Sprintf("the token's %s limit of %d per %ds is reached; retry in %s",
					dir, sp.limit.rate(dir), sp.limit.Interval, sp.res.RetryAfter.Round(time.Millisecond)),
			}
		case sp.charge == nil:
			return f(w, r, tok)
		}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), chargeKey{}, sp.charge))
		err = f(sw, r, tok)
		if err != nil || sw.status != dir.okStatus() {
			sp.charge.refund(r.Context()) //nolint:contextcheck // a refund outlives a request whose client went away
		}
		return err
	}
}

// lmstfyLimited charges an lmstfy job request as lmstfy's throttler does: 429 {"msg": "token(...)
// <consume|produce> reach the limit rate, please retry later"} when the limit is reached, and a
// refund unless the request answers 200 (consume) or 201 (publish).
func (s *Server) lmstfyLimited(dir limitDir, h lmstfyHandler) lmstfyHandler {
	return func(w http.ResponseWriter, r *http.Request, c lmstfyCall) {
		sp, err := s.spend(w, r, c.tok, dir)
		switch {
		case err != nil:
			lmstfyFail(w, r, err)
			return
		case sp.denied:
			if st := stateOf(r.Context()); st != nil {
				st.code = CodeRateLimited
			}
			writeJSON(w, http.StatusTooManyRequests, map[string]string{
				"msg": fmt.Sprintf("token(%s) %s reach the limit rate, please retry later", c.tok.ID, dir.action()),
			})
			return
		case sp.charge == nil:
			h(w, r, c)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), chargeKey{}, sp.charge))
		h(sw, r, c)
		if sw.status != dir.okStatus() {
			sp.charge.refund(r.Context()) //nolint:contextcheck // a refund outlives a request whose client went away
		}
	}
}
