package sluice

import "errors"

// ErrInvalid is matched (errors.Is) by every *FieldError, for a caller that only asks whether an
// input was refused.
var ErrInvalid = errors.New("invalid input")

// FieldError says that one input field is wrong: which field and why. It is the one shape of a
// refused argument or setting in every package of Sluice (a job's priority, a room's max_active, a
// task's target_url, a token's secret), so a caller needs one errors.As to name the field, and the
// HTTP server answers every one alike: 400 invalid_argument with "field" and "message".
//
// A package returns it wrapped with its own prefix ("queue: invalid ttr: must be at least 1ms"),
// so read it with errors.As.
type FieldError struct {
	// Field names the field as the HTTP API spells it: snake_case, with a path for nested ones
	// (jobs[2].priority, callback.url).
	Field string
	// Reason says what is wrong with it, for people ("must be at least 1ms"); it is the HTTP
	// error's message.
	Reason string
}

// Invalid returns a FieldError for field, its reason formatted as fmt.Sprintf does with every string
// argument shortened to MaxEcho bytes (Sprintf), since the arguments are often the refused input.
func Invalid(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: Sprintf(format, args...)}
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }
