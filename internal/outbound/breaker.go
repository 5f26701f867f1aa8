package outbound

import (
	"cmp"
	"errors"
	"sync"
	"time"
)

// BreakerState is where a Breaker is in its cycle.
type BreakerState int

const (
	// Closed: calls flow; consecutive failures are counted.
	Closed BreakerState = iota
	// Open: calls are held back until the cool-down ends.
	Open
	// HalfOpen: the cool-down ended; one probe call is let through to test the destination.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	default:
		return "unknown"
	}
}

// BreakerConfig configures a Breaker. The zero value is usable: every field's comment states its
// default.
type BreakerConfig struct {
	// Failures is how many consecutive failed calls open the breaker. Default 5.
	Failures int
	// CoolDown is how long the breaker stays open the first time. Each failed probe doubles it, up
	// to MaxCoolDown; a successful probe resets it. Default 5s.
	CoolDown time.Duration
	// MaxCoolDown caps the cool-down. Default 1m.
	MaxCoolDown time.Duration
	// ProbeTimeout is how long a probe may go unreported before another call may probe, so a probe
	// whose caller died does not hold the breaker half-open for ever. Default 1m.
	ProbeTimeout time.Duration
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	c.Failures = cmp.Or(c.Failures, 5)
	c.CoolDown = cmp.Or(c.CoolDown, 5*time.Second)
	c.MaxCoolDown = cmp.Or(c.MaxCoolDown, max(time.Minute, c.CoolDown))
	c.ProbeTimeout = cmp.Or(c.ProbeTimeout, time.Minute)
	return c
}

// Validate returns an error naming the first field out of range, after defaults are applied.
func (c BreakerConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Failures < 1:
		return errors.New("outbound: BreakerConfig.Failures must be at least 1")
	case c.CoolDown <= 0:
		return errors.New("outbound: BreakerConfig.CoolDown must be positive")
	case c.MaxCoolDown < c.CoolDown:
		return errors.New("outbound: BreakerConfig.MaxCoolDown must be at least CoolDown")
	case c.ProbeTimeout <= 0:
		return errors.New("outbound: BreakerConfig.ProbeTimeout must be positive")
	}
	return nil
}

// Breaker is an in-process circuit breaker for one destination. When the destination keeps
// failing, it stops calls for a cool-down instead of letting every queued call burn its tries
// against it, then lets one probe through; the probe's result closes it or opens it again for
// twice as long. It is cheap (one mutex, no goroutine) and safe for concurrent use.
//
// Use it as: if !b.Allow() { wait }; make the call; b.Record(outcome != Retry).
type Breaker struct {
	cfg BreakerConfig
	now func() time.Time

	mu        sync.Mutex
	state     BreakerState
	failures  int           // consecutive failures while closed
	coolDown  time.Duration // the current (doubling) cool-down
	until     time.Time     // end of the cool-down while open
	probeAt   time.Time     // when the probe in flight started (half-open); zero: none
	lastTrans time.Time
}

// NewBreaker returns a closed Breaker. Out-of-range fields are replaced by their defaults; call
// BreakerConfig.Validate to report them instead.
func NewBreaker(cfg BreakerConfig) *Breaker {
	if cfg.Validate() != nil {
		cfg = BreakerConfig{}
	}
	cfg = cfg.withDefaults()
	return &Breaker{cfg: cfg, now: time.Now, coolDown: cfg.CoolDown}
}

// Allow reports whether a call may go now: always when closed; when open, once the cool-down has
// ended, for exactly one probe (the breaker turns half-open); while the probe is out, no.
func (b *Breaker) Allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	switch b.state {
	case Closed:
		return true
	case Open:
		if now.Before(b.until) {
			return false
		}
		b.state, b.probeAt, b.lastTrans = HalfOpen, now, now
		return true
	default: // HalfOpen
		if !b.probeAt.IsZero() && now.Sub(b.probeAt) < b.cfg.ProbeTimeout {
			return false
		}
		b.probeAt = now // the last probe went unreported: let another one through
		return true
	}
}

// Record reports the result of a call that Allow let through: ok is false for a failure that
// says the destination is unwell (Classify's Retry), true otherwise. Results that arrive while
// the breaker is open (calls that started before it opened) are ignored.
func (b *Breaker) Record(ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	switch b.state {
	case Closed:
		if ok {
			b.failures = 0
			return
		}
		b.failures++
		if b.failures >= b.cfg.Failures {
			b.open(now)
		}
	case HalfOpen:
		if ok {
			b.state, b.failures, b.coolDown, b.probeAt, b.lastTrans = Closed, 0, b.cfg.CoolDown, time.Time{}, now
			return
		}
		b.coolDown = min(2*b.coolDown, b.cfg.MaxCoolDown)
		b.open(now)
	}
}

func (b *Breaker) open(now time.Time) {
	b.state, b.until, b.probeAt, b.failures, b.lastTrans = Open, now.Add(b.coolDown), time.Time{}, 0, now
}

// BreakerStatus is a snapshot of a Breaker, for stats and metrics.
type BreakerStatus struct {
	State BreakerState
	// Failures is the count of consecutive failures while closed.
	Failures int
	// OpenUntil is when the cool-down ends while open; zero otherwise.
	OpenUntil time.Time
	// Since is when the breaker last changed state; zero if never.
	Since time.Time
}

// Status returns a snapshot of the breaker. An open breaker whose cool-down has ended still says
// Open until the next Allow.
func (b *Breaker) Status() BreakerStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := BreakerStatus{State: b.state, Failures: b.failures, Since: b.lastTrans}
	if b.state == Open {
		st.OpenUntil = b.until
	}
	return st
}

// idle reports whether the breaker holds nothing worth keeping (closed, no failures counted).
func (b *Breaker) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == Closed && b.failures == 0
}

// Breakers holds one Breaker per destination name (an endpoint's name, a callback's host), made on
// first use. It stays bounded: past maxBreakers entries, idle breakers are dropped.
type Breakers struct {
	cfg BreakerConfig
	now func() time.Time

	mu sync.Mutex
	m  map[string]*Breaker
}

// maxBreakers is the size past which Breakers drops idle entries on insert.
const maxBreakers = 10_000

// NewBreakers returns an empty set whose breakers all use cfg.
func NewBreakers(cfg BreakerConfig) *Breakers {
	return &Breakers{cfg: cfg, now: time.Now, m: make(map[string]*Breaker)}
}

// Get returns the breaker of name, making a closed one the first time.
func (bs *Breakers) Get(name string) *Breaker {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.m[name]; ok {
		return b
	}
	if len(bs.m) >= maxBreakers {
		for k, b := range bs.m {
			if b.idle() {
				delete(bs.m, k)
			}
		}
	}
	b := NewBreaker(bs.cfg)
	b.now = bs.now
	bs.m[name] = b
	return b
}

// Forget drops the breaker of name (an endpoint was deleted).
func (bs *Breakers) Forget(name string) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	delete(bs.m, name)
}

// Each calls fn with every breaker's name and status, for stats.
func (bs *Breakers) Each(fn func(name string, st BreakerStatus)) {
	bs.mu.Lock()
	names := make([]string, 0, len(bs.m))
	breakers := make([]*Breaker, 0, len(bs.m))
	for k, b := range bs.m {
		names = append(names, k)
		breakers = append(breakers, b)
	}
	bs.mu.Unlock()
	for i, b := range breakers {
		fn(names[i], b.Status())
	}
}
