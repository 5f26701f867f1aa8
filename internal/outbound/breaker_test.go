package outbound

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// clock is a hand-moved time source: breaker transitions are tested without waiting.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func testBreaker(c *clock, cfg BreakerConfig) *Breaker {
	b := NewBreaker(cfg)
	b.now = c.now
	return b
}

func TestBreakerStateMachine(t *testing.T) {
	t.Parallel()
	c := newClock()
	b := testBreaker(c, BreakerConfig{Failures: 3, CoolDown: time.Second, MaxCoolDown: 3 * time.Second})
	want := func(state BreakerState, allow bool) {
		t.Helper()
		if got := b.Allow(); got != allow {
			t.Fatalf("Allow = %v, want %v (status %+v)", got, allow, b.Status())
		}
		if got := b.Status().State; got != state {
			t.Fatalf("state = %v, want %v", got, state)
		}
	}

	// Closed: failures below the threshold, or broken by a success, keep it closed.
	want(Closed, true)
	b.Record(false)
	b.Record(false)
	b.Record(true)
	b.Record(false)
	b.Record(false)
	want(Closed, true)
	if f := b.Status().Failures; f != 2 {
		t.Fatalf("failures = %d, want 2", f)
	}
	// The third consecutive failure opens it for the cool-down.
	b.Record(false)
	want(Open, false)
	if u := b.Status().OpenUntil; !u.Equal(c.t.Add(time.Second)) {
		t.Fatalf("OpenUntil = %v", u)
	}
	b.Record(true) // a call that started before it opened does not close it
	c.add(999 * time.Millisecond)
	want(Open, false)

	// Cool-down over: exactly one probe.
	c.add(time.Millisecond)
	want(HalfOpen, true)
	want(HalfOpen, false)
	// The probe fails: open again for twice as long.
	b.Record(false)
	want(Open, false)
	c.add(2*time.Second - time.Millisecond)
	want(Open, false)
	c.add(time.Millisecond)
	want(HalfOpen, true)
	b.Record(false) // 4s, capped at 3s
	c.add(3 * time.Second)
	want(HalfOpen, true)
	// A successful probe closes it and resets the cool-down.
	b.Record(true)
	want(Closed, true)
	for range 3 {
		b.Record(false)
	}
	want(Open, false)
	c.add(time.Second)
	want(HalfOpen, true)
}

func TestBreakerLostProbeIsReplaced(t *testing.T) {
	t.Parallel()
	c := newClock()
	b := testBreaker(c, BreakerConfig{Failures: 1, CoolDown: time.Second, ProbeTimeout: 10 * time.Second})
	b.Record(false)
	c.add(time.Second)
	if !b.Allow() {
		t.Fatal("no probe after the cool-down")
	}
	c.add(9 * time.Second)
	if b.Allow() {
		t.Fatal("second probe while the first is out")
	}
	c.add(time.Second)
	if !b.Allow() {
		t.Fatal("no new probe after the first went unreported for ProbeTimeout")
	}
}

func TestBreakerDefaultsAndValidate(t *testing.T) {
	t.Parallel()
	c := newClock()
	b := testBreaker(c, BreakerConfig{})
	for range 4 {
		b.Record(false)
	}
	if !b.Allow() {
		t.Fatal("opened before 5 failures")
	}
	b.Record(false)
	if b.Allow() {
		t.Fatal("still closed after 5 failures")
	}
	c.add(5 * time.Second)
	if !b.Allow() {
		t.Fatal("no probe after the default 5s cool-down")
	}
	for field, cfg := range map[string]BreakerConfig{
		"Failures":     {Failures: -1},
		"CoolDown":     {CoolDown: -time.Second},
		"MaxCoolDown":  {CoolDown: time.Minute, MaxCoolDown: time.Second},
		"ProbeTimeout": {ProbeTimeout: -1},
	} {
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v", field, err)
		}
	}
}

func TestBreakersPerName(t *testing.T) {
	t.Parallel()
	c := newClock()
	bs := NewBreakers(BreakerConfig{Failures: 1})
	bs.now = c.now
	bs.Get("a").Record(false)
	if bs.Get("a").Allow() {
		t.Fatal("a should be open")
	}
	if !bs.Get("b").Allow() {
		t.Fatal("b shares a's breaker")
	}
	seen := map[string]BreakerState{}
	bs.Each(func(name string, st BreakerStatus) { seen[name] = st.State })
	if len(seen) != 2 || seen["a"] != Open || seen["b"] != Closed {
		t.Fatalf("Each saw %v", seen)
	}
	bs.Forget("a")
	if !bs.Get("a").Allow() {
		t.Fatal("a forgotten but still open")
	}
}

func TestBreakersStayBounded(t *testing.T) {
	t.Parallel()
	bs := NewBreakers(BreakerConfig{Failures: 1})
	bs.Get("failing").Record(false)
	for i := range maxBreakers + 10 {
		bs.Get("host-" + strconv.Itoa(i))
	}
	bs.mu.Lock()
	n := len(bs.m)
	_, kept := bs.m["failing"]
	bs.mu.Unlock()
	if n > maxBreakers || !kept {
		t.Fatalf("%d breakers (cap %d), failing kept: %v", n, maxBreakers, kept)
	}
}
