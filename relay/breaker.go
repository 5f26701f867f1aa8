package relay

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

// BreakerConfig configures the circuit breaker of each endpoint in a Dispatcher
// (DispatcherConfig.Breaker). The zero value is usable: every field's comment states its
// default.
type BreakerConfig struct {
	// Failures is how many consecutive retryable failures open the breaker. Default 5.
	Failures int
	// CoolDown is how long the breaker stays open the first time; each failed probe doubles it,
	// up to MaxCoolDown, and a successful probe resets it. Default 5s.
	CoolDown time.Duration
	// MaxCoolDown caps the cool-down. Default 1m.
	MaxCoolDown time.Duration
	// ProbeTimeout is how long a probe may go unreported before another task may probe. Default
	// 1m.
	ProbeTimeout time.Duration
}

// engine is the outbound engine's form of the config, which applies the defaults.
func (c BreakerConfig) engine() outbound.BreakerConfig {
	return outbound.BreakerConfig{Failures: c.Failures, CoolDown: c.CoolDown, MaxCoolDown: c.MaxCoolDown, ProbeTimeout: c.ProbeTimeout}
}

// BreakerState is BreakerClosed, BreakerOpen or BreakerHalfOpen.
type BreakerState int

// Breaker states.
const (
	// BreakerClosed: calls flow; consecutive failures are counted.
	BreakerClosed BreakerState = iota
	// BreakerOpen: dispatch to the endpoint is held back until the cool-down ends.
	BreakerOpen
	// BreakerHalfOpen: the cool-down ended; one probe task goes.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	default:
		return fmt.Sprintf("BreakerState(%d)", int(s))
	}
}

// BreakerStatus is a snapshot of an endpoint's breaker (Dispatcher.Breaker).
type BreakerStatus struct {
	State BreakerState
	// Failures is the count of consecutive failures while closed.
	Failures int
	// OpenUntil is when the cool-down ends while open; zero otherwise.
	OpenUntil time.Time
	// Since is when the breaker last changed state; zero if never.
	Since time.Time
}

// breakerStatus converts the engine's snapshot.
func breakerStatus(st outbound.BreakerStatus) BreakerStatus {
	out := BreakerStatus{Failures: st.Failures, OpenUntil: st.OpenUntil, Since: st.Since}
	switch st.State {
	case outbound.Open:
		out.State = BreakerOpen
	case outbound.HalfOpen:
		out.State = BreakerHalfOpen
	default:
		out.State = BreakerClosed
	}
	return out
}

// CallOutcome is what an offline call came to (CallEvent.Outcome).
type CallOutcome int

// Call outcomes.
const (
	// CallSuccess: a 2xx.
	CallSuccess CallOutcome = iota + 1
	// CallRetry: a connection error, a timeout, a 5xx or a 429; tried again while tries are left.
	CallRetry
	// CallFinal: any other status, or a refused destination; not tried again.
	CallFinal
)

// String returns "success", "retry" or "final".
func (o CallOutcome) String() string {
	switch o {
	case CallSuccess:
		return "success"
	case CallRetry:
		return "retry"
	case CallFinal:
		return "final"
	default:
		return fmt.Sprintf("CallOutcome(%d)", int(o))
	}
}

// callOutcome converts the engine's classification.
func callOutcome(o outbound.Outcome) CallOutcome {
	switch o {
	case outbound.Success:
		return CallSuccess
	case outbound.Retry:
		return CallRetry
	default:
		return CallFinal
	}
}
