package tenant

import (
	"errors"

	"github.com/sluicehq/sluice"
)

// ErrUnauthenticated is the error of a token secret that is unknown or revoked.
var ErrUnauthenticated = errors.New("missing or unknown token")

// ErrNotFound matches (errors.Is) every NotFoundError.
var ErrNotFound = errors.New("not found")

// NotFoundError is a namespace or token that does not exist; Message says which, for people.
type NotFoundError struct {
	Message string
}

func (e *NotFoundError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

func notFound(msg string) error { return &NotFoundError{Message: msg} }

// invalidArg is bad input: a *sluice.FieldError naming the field at fault.
func invalidArg(field, format string, args ...any) error {
	return sluice.Invalid(field, format, args...)
}
