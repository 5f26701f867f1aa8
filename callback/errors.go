package callback

import (
	"errors"
	"fmt"
)

// ErrTooManyDestinations is returned by Store.AddDestination when the namespace has
// MaxDestinations prefixes already.
var ErrTooManyDestinations = errors.New("callback: too many callback destinations")

// FieldError is a bad input to the settings Store, naming the field (with the JSON name the
// admin API uses) and why. errors.Is(err, ErrInvalid) holds for every FieldError.
type FieldError struct {
	Field  string
	Reason string
}

// ErrInvalid matches every FieldError.
var ErrInvalid = errors.New("callback: invalid input")

func (e *FieldError) Error() string { return fmt.Sprintf("callback: %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
