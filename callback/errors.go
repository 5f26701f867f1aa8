package callback

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice"
)

// ErrTooManyDestinations is returned by Store.AddDestination when the namespace has
// MaxDestinations prefixes already.
var ErrTooManyDestinations = errors.New("callback: too many callback destinations")

// fieldErr is a bad input to the settings Store: a *sluice.FieldError naming the field (with the
// JSON name the admin API uses) and why, matched by errors.Is(err, sluice.ErrInvalid).
func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("callback: %w", sluice.Invalid(field, format, args...))
}
