package relay

import (
	"errors"
	"fmt"
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
	// ErrNotPermitted: the task is not (or no longer) permitted: still waiting, cancelled or done.
	ErrNotPermitted = errors.New("relay: task not permitted")
	// ErrGrantInvalid: a priority grant that is malformed, forged, expired or for another subject.
	ErrGrantInvalid = errors.New("relay: invalid priority grant")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("relay: client closed")
)

// FieldError is a bad input, naming the field (with the JSON name the HTTP API uses) and why.
// errors.Is(err, ErrInvalid) holds for every FieldError.
type FieldError struct {
	Field  string
	Reason string
}

// ErrInvalid matches every FieldError.
var ErrInvalid = errors.New("relay: invalid input")

func (e *FieldError) Error() string { return fmt.Sprintf("relay: %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
