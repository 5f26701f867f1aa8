package relay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/outbound"
)

// Endpoint is a slow service that tasks call, with the limits that protect it. Its settings live
// in Redis and every Client caches them; a change applies on every Client before SetEndpoint
// returns (and within Config.RefreshInterval where the change could not be pushed).
type Endpoint struct {
	// Name identifies the endpoint (and starts the ids of its tasks): 1 to 64 bytes of
	// [-_A-Za-z0-9].
	Name string
	// TargetURL is the http or https URL tasks call. A task may call this URL or any URL under it
	// (same scheme and host, path below it); nothing else (no open relay).
	TargetURL string
	// QPS is the most calls started per second, across every dispatcher. 0 means no rate limit.
	QPS float64
	// Concurrency is the most calls in flight at once (online permits included). Default 1.
	Concurrency int
	// Timeout bounds one call. Default 30s.
	Timeout time.Duration
	// QueueTimeout is the longest a task waits for its first start; it then ends as timeout.
	// Default (and cap): Config.PendingRetention.
	QueueTimeout time.Duration
	// MaxQueued bounds the tasks waiting for their first start; Submit returns ErrQueueFull past
	// it. Default 10,000.
	MaxQueued int
	// MaxQueuedPerSubject bounds the waiting tasks of one subject (SubmitParams.Subject), so one
	// user cannot fill the queue. 0 means no bound. Default 0.
	MaxQueuedPerSubject int
	// FairShare shares the endpoint between subjects (SubmitParams.Subject; "" is one subject
	// too): within a priority, subjects take turns, one task each per round, so a subject that
	// queued many tasks delays another subject's next task by at most one task per subject with
	// tasks waiting. Off (the default): first come, first served within a priority. Switching it
	// applies to tasks submitted afterwards; tasks queued before keep their place ahead of them.
	FairShare bool
	// Tries is the most attempts of an offline call (connection errors, timeouts, 5xx and 429 are
	// retried; other 4xx are final). Default 3.
	Tries int
	// AvgDuration is the expected duration of one call, for the ETA until calls were measured.
	// 0 means unknown.
	AvgDuration time.Duration
	// RetryBackoff is the first retry delay of an offline call; it doubles (with jitter) per
	// attempt up to MaxRetryBackoff, and a longer Retry-After wins. Default 1s.
	RetryBackoff time.Duration
	// MaxRetryBackoff caps the retry delay. Default 1m.
	MaxRetryBackoff time.Duration
	// PermitTTL is how long an online task's permit is valid; its concurrency slot is held until
	// Done or then. Default 1m.
	PermitTTL time.Duration
	// PermitMethods, when set, are the only HTTP methods a permit admits a call with
	// (CheckPermit's PermitCall.Method): a permit cannot buy a call the endpoint does not sell.
	// Each one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS. Default none: any method.
	PermitMethods []string `json:",omitempty"`
	// PermitPathPrefix, when set, is the path a permitted call's path must equal or lie below
	// (PermitCall.Path; outbound's rule: at a segment boundary, dot segments resolved, decoded and
	// as written), such as "/v1/generate". Default "": any path.
	PermitPathPrefix string `json:",omitempty"`
	// UpdatedAt is when the settings were last stored (set by SetEndpoint).
	UpdatedAt time.Time
}

// Bounds of endpoint settings.
const (
	maxQPS = 1e6
	// minQPS is the lowest rate limit: a call every 11.6 days. The limit counts time in ms, and
	// far slower rates overflow the millisecond figures Redis stores for it.
	minQPS         = 1e-6
	maxConcurrency = 1_000_000
	maxTries       = 100
)

// withDefaults fills unset fields; pendingCap is Config.PendingRetention.
func (e Endpoint) withDefaults(pendingCap time.Duration) Endpoint {
	e.Concurrency = cmp.Or(e.Concurrency, 1)
	e.Timeout = cmp.Or(e.Timeout, 30*time.Second)
	e.QueueTimeout = cmp.Or(e.QueueTimeout, pendingCap)
	e.MaxQueued = cmp.Or(e.MaxQueued, 10_000)
	e.Tries = cmp.Or(e.Tries, 3)
	e.RetryBackoff = cmp.Or(e.RetryBackoff, time.Second)
	e.MaxRetryBackoff = cmp.Or(e.MaxRetryBackoff, max(time.Minute, e.RetryBackoff))
	e.PermitTTL = cmp.Or(e.PermitTTL, time.Minute)
	return e
}

// validate returns the first bad field, named as the HTTP API names it.
func (e Endpoint) validate(pendingCap time.Duration) error {
	if !validName(e.Name) {
		return fieldErr("name", nameRule)
	}
	if err := validTargetURL(e.TargetURL); err != nil {
		return err
	}
	switch {
	case math.IsNaN(e.QPS) || e.QPS < 0 || e.QPS > maxQPS || e.QPS > 0 && e.QPS < minQPS:
		return fieldErr("qps", "must be 0 (no limit) or between %g and %g", float64(minQPS), float64(maxQPS))
	case e.Concurrency < 0 || e.Concurrency > maxConcurrency:
		return fieldErr("concurrency", "must be between 1 and %d", maxConcurrency)
	case e.Timeout < 0 || e.Timeout > 24*time.Hour:
		return fieldErr("timeout", "must be between 1ms and 24h")
	case e.QueueTimeout < 0 || e.QueueTimeout > pendingCap:
		return fieldErr("queue_timeout", "must be between 1ms and the pending retention (%s)", pendingCap)
	case e.MaxQueued < 0:
		return fieldErr("max_queued", "must not be negative")
	case e.MaxQueuedPerSubject < 0:
		return fieldErr("max_queued_per_subject", "must not be negative (0: no bound)")
	case e.Tries < 0 || e.Tries > maxTries:
		return fieldErr("tries", "must be between 1 and %d", maxTries)
	case e.AvgDuration < 0:
		return fieldErr("avg_duration", "must not be negative (0: unknown)")
	case e.RetryBackoff < 0:
		return fieldErr("retry_backoff", "must not be negative")
	case e.MaxRetryBackoff < 0 || (e.MaxRetryBackoff > 0 && e.MaxRetryBackoff < e.RetryBackoff):
		return fieldErr("max_retry_backoff", "must not be below retry_backoff")
	case e.PermitTTL < 0 || e.PermitTTL > 24*time.Hour:
		return fieldErr("permit_ttl", "must be between 1ms and 24h")
	case len(e.PermitMethods) > len(methods):
		return fieldErr("permit_methods", "lists at most %d methods", len(methods))
	case len(e.PermitPathPrefix) > 1024:
		return fieldErr("permit_path_prefix", "must be at most 1024 bytes")
	}
	for _, m := range e.PermitMethods {
		if !methods[m] {
			return fieldErr("permit_methods", "%q: each must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS", m)
		}
	}
	if e.PermitPathPrefix != "" {
		if err := outbound.CheckPathPrefix(e.PermitPathPrefix); err != nil {
			return fieldErr("permit_path_prefix", "%s", strings.TrimPrefix(err.Error(), "outbound: "))
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"timeout", e.Timeout}, {"queue_timeout", e.QueueTimeout}, {"permit_ttl", e.PermitTTL}} {
		if d.v > 0 && d.v < time.Millisecond {
			return fieldErr(d.field, "must be at least 1ms")
		}
	}
	return nil
}

// maxTargetURL bounds an endpoint's target URL as a callback's URL is bounded: every answer that
// lists endpoints carries it.
const maxTargetURL = outbound.MaxCallbackURL

func validTargetURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return fieldErr("target_url", "is required")
	case len(raw) > maxTargetURL:
		return fieldErr("target_url", "longer than %d bytes", maxTargetURL)
	case err != nil:
		return fieldErr("target_url", "is not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fieldErr("target_url", "must be an absolute http or https URL")
	case u.Host == "":
		return fieldErr("target_url", "must name a host")
	case u.User != nil:
		return fieldErr("target_url", "must not carry user information")
	case u.Fragment != "" || u.RawQuery != "":
		return fieldErr("target_url", "must not carry a query or fragment (tasks add query_params)")
	}
	return nil
}

// burst is how many calls the rate limit lets start at once: one millisecond's worth, at least
// one. A burst of one spaces calls evenly, so no one-second window holds more than QPS calls;
// above 1,000 QPS a batch of starts per millisecond is what lets dispatch keep up.
func (e Endpoint) burst() int64 {
	return max(1, int64(e.QPS/1000))
}

// window is the most calls the rate limit lets into one sliding second: the QPS, rounded up (the
// spacing of a fractional QPS puts that many into some seconds).
func (e Endpoint) window() int64 {
	return int64(math.Ceil(e.QPS))
}

// SetEndpoint creates or replaces an endpoint. Unset fields get their defaults; a bad field is a
// *sluice.FieldError naming it. The change applies on every Client before it returns (each one
// confirms it; endpoint_watch.go), so a task submitted anywhere next sees it.
func (c *Client) SetEndpoint(ctx context.Context, e Endpoint) (Endpoint, error) {
	if err := e.validate(c.cfg.PendingRetention); err != nil {
		return Endpoint{}, err
	}
	e = e.withDefaults(c.cfg.PendingRetention)
	e.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
	b, err := json.Marshal(e)
	if err != nil {
		return Endpoint{}, fmt.Errorf("relay: encode endpoint: %w", err)
	}
	if _, err := c.changeEndpoint(ctx, e.Name, b); err != nil {
		return Endpoint{}, fmt.Errorf("relay: set endpoint %s: %w", e.Name, err)
	}
	return e, nil
}

// DeleteEndpoint removes an endpoint (ErrNotFound when there is none), on every Client before it
// returns. Its waiting tasks are cancelled by the next maintenance pass; calls under way finish.
func (c *Client) DeleteEndpoint(ctx context.Context, name string) error {
	if !validName(name) {
		return ErrNotFound
	}
	existed, err := c.changeEndpoint(ctx, name, "")
	if err != nil {
		return fmt.Errorf("relay: delete endpoint %s: %w", name, err)
	}
	if !existed {
		return ErrNotFound
	}
	return nil
}

// changeEndpoint stores an endpoint's settings (settings "" deletes it), then waits for every
// Client to apply the change. It reports whether the endpoint existed.
func (c *Client) changeEndpoint(ctx context.Context, name string, settings any) (bool, error) {
	r := c.reg
	if settings != "" {
		// The endpoint's hash slot joins the due index's slots in use before any task of it can
		// make due work (duework.Announce).
		if err := duework.Announce(ctx, c.rdb, dueBase(c.cfg.Prefix), c.keys.cluster, c.keys.get(name).due()); err != nil {
			return false, err
		}
	}
	res, err := c.scripts.Run(ctx, scriptEndpointSet, []string{r.settings, r.version, r.known, r.deleted}, name, settings, c.ch.settings).Int64Slice()
	if err != nil {
		return false, err
	}
	if len(res) != 3 {
		return false, fmt.Errorf("unexpected reply %v", res)
	}
	c.eps.invalidate()
	c.awaitApplied(ctx, res[1], res[2])
	return res[0] == 1, nil
}

// Endpoint returns an endpoint's settings, or ErrNotFound. An endpoint missing from this Client's
// cached settings is looked for in Redis before the answer is ErrNotFound.
func (c *Client) Endpoint(ctx context.Context, name string) (Endpoint, error) {
	snap, err := c.endpoints(ctx)
	if err != nil {
		return Endpoint{}, err
	}
	e, ok := snap.byName[name]
	if !ok && validName(name) {
		if snap, err = c.endpointsReadSince(ctx, time.Now()); err != nil {
			return Endpoint{}, err
		}
		e, ok = snap.byName[name]
	}
	if !ok {
		return Endpoint{}, ErrNotFound
	}
	return e, nil
}

// Endpoints lists the endpoints by name.
func (c *Client) Endpoints(ctx context.Context) ([]Endpoint, error) {
	snap, err := c.endpoints(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Clone(snap.list), nil
}

// CoveringEndpoint names the endpoint whose target URL covers url (the longest one when several
// do, as Submit resolves a target_url), from the settings as this Client last saw them; ok is
// false when none does. The callback deliverer uses it to find the endpoint whose limits a
// callback counts against.
func (c *Client) CoveringEndpoint(ctx context.Context, url string) (endpoint string, ok bool, err error) {
	snap, err := c.endpoints(ctx)
	if err != nil {
		return "", false, err
	}
	e, ok := snap.covering(url)
	return e.Name, ok, nil
}

// endpointSnapshot is the endpoint settings at one version of the registry.
type endpointSnapshot struct {
	version int64
	gen     int64 // endpointCache.gen when its load began
	checked time.Time
	byName  map[string]Endpoint
	list    []Endpoint // by name
	// prefixes is every endpoint, longest target URL first, for resolving a task's target_url
	// and finding a callback's endpoint; match is their target URLs, parsed once.
	prefixes []Endpoint
	match    outbound.Prefixes
}

// covering returns the endpoint whose target URL covers rawURL (the longest one), if any.
func (snap *endpointSnapshot) covering(rawURL string) (Endpoint, bool) {
	i := snap.match.Match(rawURL)
	if i < 0 {
		return Endpoint{}, false
	}
	return snap.prefixes[i], true
}

// endpointCache holds the latest snapshot. A read older than the refresh interval checks the
// version counter (one GET) and reloads the settings only when it moved. One refresh runs at a
// time; other callers meanwhile use the snapshot they have, unless the settings changed since it
// was loaded (a change made through this Client, or one another Client published): they then
// wait for a snapshot loaded after the change, so a change applies at once (a callback published
// just after its endpoint was set counts against it).
type endpointCache struct {
	snap atomic.Pointer[endpointSnapshot]
	mu   sync.Mutex // one refresh at a time
	// gen counts the changes this Client learnt of; a snapshot remembers the gen read before its
	// load began, and one from an older gen is not used while a newer one can be loaded.
	gen atomic.Int64

	changedMu sync.Mutex
	changed   chan struct{} // closed by the next invalidate (made by changedC)
}

// invalidate drops the snapshot: the next read loads the settings again.
func (ec *endpointCache) invalidate() {
	ec.gen.Add(1)
	ec.changedMu.Lock()
	if ec.changed != nil {
		close(ec.changed)
		ec.changed = nil
	}
	ec.changedMu.Unlock()
}

// changedC returns a channel closed at the next invalidate, so a Dispatcher asleep applies a
// change (a higher concurrency or rate) at once.
func (ec *endpointCache) changedC() <-chan struct{} {
	ec.changedMu.Lock()
	defer ec.changedMu.Unlock()
	if ec.changed == nil {
		ec.changed = make(chan struct{})
	}
	return ec.changed
}

// endpoints returns a snapshot no older than the refresh interval (or the last one, when a
// refresh by another caller is under way, or Redis cannot be read and a snapshot exists).
func (c *Client) endpoints(ctx context.Context) (*endpointSnapshot, error) {
	return c.snapshot(ctx, time.Time{})
}

// endpointsReadSince returns a snapshot whose version was read from Redis at or after since: the
// read-through of a name or URL the cached settings lack, so that an endpoint created a moment
// ago elsewhere is found rather than answered ErrNotFound. Callers that ask together share a
// read, so a flood of unknown names costs one GET at a time.
func (c *Client) endpointsReadSince(ctx context.Context, since time.Time) (*endpointSnapshot, error) {
	return c.snapshot(ctx, since)
}

func (c *Client) snapshot(ctx context.Context, since time.Time) (*endpointSnapshot, error) {
	ec := &c.eps
	current := func(s *endpointSnapshot) bool { return s != nil && s.gen == ec.gen.Load() }
	fresh := func(s *endpointSnapshot) bool {
		return current(s) && time.Since(s.checked) < c.cfg.RefreshInterval && !s.checked.Before(since)
	}
	snap := ec.snap.Load()
	if fresh(snap) {
		return snap, nil
	}
	if current(snap) && since.IsZero() {
		// Only old: one caller refreshes, the others keep using what they have.
		if !ec.mu.TryLock() {
			return snap, nil
		}
	} else {
		ec.mu.Lock()
	}
	defer ec.mu.Unlock()
	if snap = ec.snap.Load(); fresh(snap) {
		return snap, nil
	}
	// The load is shared by every caller: it does not end with this caller's context.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Subscribed before the load, so no change falls between the two.
	c.watchSettings(lctx)
	gen := ec.gen.Load() // read before the load, so a later change is not lost
	force := snap != nil && snap.gen != gen
	next, err := c.loadEndpoints(lctx, snap, force)
	if err != nil {
		// The snapshot kept is not current after a change: the next call tries again. A
		// read-through answers the error: the name it looks for may exist.
		if snap != nil && since.IsZero() {
			c.cfg.Logger.Warn("relay: refresh endpoint settings", "error", err)
			return snap, nil
		}
		return nil, err
	}
	next.gen = gen
	ec.snap.Store(next)
	return next, nil
}

func (c *Client) loadEndpoints(ctx context.Context, prev *endpointSnapshot, force bool) (*endpointSnapshot, error) {
	now := time.Now() // before the read: the snapshot holds every change made before now
	v, err := c.rdb.Get(ctx, c.reg.version).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("relay: read endpoint version: %w", err)
	}
	if prev != nil && prev.version == v && !force {
		next := *prev
		next.checked = now
		return &next, nil
	}
	// The version is read before the settings, so a change between the two reads is picked up
	// by the next refresh.
	all, err := c.rdb.HGetAll(ctx, c.reg.settings).Result()
	if err != nil {
		return nil, fmt.Errorf("relay: read endpoints: %w", err)
	}
	snap := &endpointSnapshot{version: v, checked: now, byName: make(map[string]Endpoint, len(all))}
	for name, raw := range all {
		var e Endpoint
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			c.cfg.Logger.Warn("relay: skip unreadable endpoint settings", "endpoint", name, "error", err)
			continue
		}
		e.Name = name
		e = e.withDefaults(c.cfg.PendingRetention)
		snap.byName[name] = e
		snap.list = append(snap.list, e)
	}
	slices.SortFunc(snap.list, func(a, b Endpoint) int { return strings.Compare(a.Name, b.Name) })
	snap.prefixes = slices.Clone(snap.list)
	slices.SortStableFunc(snap.prefixes, func(a, b Endpoint) int { return len(b.TargetURL) - len(a.TargetURL) })
	targets := make([]string, len(snap.prefixes))
	for i, e := range snap.prefixes {
		targets[i] = e.TargetURL
	}
	snap.match = outbound.ParsePrefixes(targets)
	return snap, nil
}

// resolve finds the endpoint of a task and the URL it calls (snapshot.resolve); an endpoint the
// cached settings lack is looked for in Redis before the answer is ErrNotFound.
func (c *Client) resolve(ctx context.Context, name, targetURL string) (Endpoint, string, error) {
	snap, err := c.endpoints(ctx)
	if err != nil {
		return Endpoint{}, "", err
	}
	e, target, err := snap.resolve(name, targetURL)
	if errors.Is(err, ErrNotFound) && (name == "" || validName(name)) {
		if snap, err = c.endpointsReadSince(ctx, time.Now()); err != nil {
			return Endpoint{}, "", err
		}
		e, target, err = snap.resolve(name, targetURL)
	}
	return e, target, err
}

// resolve finds the endpoint of a task and the URL it calls: by name (the URL is the endpoint's
// target, or targetURL when that is under it), or by targetURL alone (the endpoint with the
// longest target URL it is under).
func (snap *endpointSnapshot) resolve(name, targetURL string) (Endpoint, string, error) {
	if name != "" {
		e, ok := snap.byName[name]
		if !ok {
			return Endpoint{}, "", fmt.Errorf("%w: endpoint %q", ErrNotFound, name)
		}
		if targetURL == "" {
			return e, e.TargetURL, nil
		}
		if !outbound.UnderPrefix(targetURL, e.TargetURL) {
			return Endpoint{}, "", fieldErr("target_url", "is not under the target URL of endpoint %q", name)
		}
		return e, targetURL, nil
	}
	if targetURL == "" {
		return Endpoint{}, "", fieldErr("endpoint", "endpoint or target_url is required")
	}
	if e, ok := snap.covering(targetURL); ok {
		return e, targetURL, nil
	}
	return Endpoint{}, "", fmt.Errorf("%w: no endpoint's target URL covers target_url", ErrNotFound)
}
