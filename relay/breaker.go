package relay

import "github.com/sluicehq/sluice/internal/outbound"

// The circuit breaker and call outcome types of the outbound engine, under names a user of this
// package can write (the engine itself is internal): DispatcherConfig.Breaker, Dispatcher.Breaker
// and CallEvent.Outcome use them.
type (
	// BreakerConfig configures the circuit breaker of each endpoint in a Dispatcher: Failures
	// (consecutive retryable failures that open it, default 5), CoolDown (how long it stays open
	// at first, doubled per failed probe, default 5s), MaxCoolDown (default 1m), ProbeTimeout
	// (default 1m).
	BreakerConfig = outbound.BreakerConfig
	// BreakerStatus is a breaker's State, and OpenUntil while it is open.
	BreakerStatus = outbound.BreakerStatus
	// BreakerState is BreakerClosed, BreakerOpen or BreakerHalfOpen.
	BreakerState = outbound.BreakerState
	// CallOutcome is what a call came to: CallSuccess, CallRetry or CallFinal.
	CallOutcome = outbound.Outcome
)

// Breaker states.
const (
	// BreakerClosed: calls flow; consecutive failures are counted.
	BreakerClosed = outbound.Closed
	// BreakerOpen: dispatch to the endpoint is held back until the cool-down ends.
	BreakerOpen = outbound.Open
	// BreakerHalfOpen: the cool-down ended; one probe task goes.
	BreakerHalfOpen = outbound.HalfOpen
)

// Call outcomes.
const (
	// CallSuccess: a 2xx.
	CallSuccess = outbound.Success
	// CallRetry: a connection error, a timeout, a 5xx or a 429; tried again while tries are left.
	CallRetry = outbound.Retry
	// CallFinal: any other status, or a refused destination; not tried again.
	CallFinal = outbound.Final
)
