package relay

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice"
)

// Outcomes callers branch on. The HTTP layer maps each to a registered error code.
var (
	// ErrNotFound: no such task or endpoint (or a target URL under no endpoint).
	ErrNotFound = errors.New("relay: not found")
	// ErrQueueFull: the endpoint's queue (MaxQueued) or the subject's share of it
	// (MaxQueuedPerSubject) is full. Try again later.
	ErrQueueFull = errors.New("relay: queue full")
	// ErrPermitInvalid: a permit that is malformed, forged, for another task or of an earlier turn.
	ErrPermitInvalid = errors.New("relay: invalid permit")
	// ErrPermitExpired: the permit's lifetime ended.
	ErrPermitExpired = errors.New("relay: permit expired")
	// ErrPermitUsed: the permit was used already; a permit admits one call.
	ErrPermitUsed = errors.New("relay: permit already used")
	// ErrPermitMismatch: a permit presented for a call it does not admit: at another endpoint than
	// the one it was issued for, or with a method or path outside the endpoint's PermitMethods or
	// PermitPathPrefix. It is not used up by the refusal.
	ErrPermitMismatch = errors.New("relay: permit not for this call")
	// ErrNotPermitted: the task is not (or no longer) permitted: still waiting, cancelled or done.
	ErrNotPermitted = errors.New("relay: task not permitted")
	// ErrIdempotencyConflict: the idempotency key was used (by the same submitter, within
	// Config.IdempotencyRetention) for a different request; nothing was created.
	ErrIdempotencyConflict = errors.New("relay: idempotency key used with another request")
	// ErrGrantInvalid: a priority grant that is malformed, forged, expired or for another subject.
	ErrGrantInvalid = errors.New("relay: invalid priority grant")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("relay: client closed")
)

// fieldErr is a bad input: a *sluice.FieldError naming the field (with the JSON name the HTTP API
// uses) and why, matched by errors.Is(err, sluice.ErrInvalid).
func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("relay: %w", sluice.Invalid(field, format, args...))
}
