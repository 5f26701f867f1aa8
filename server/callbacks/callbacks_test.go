package callbacks

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

func TestAPIErrorMapsTheStoresErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err   error
		code  httpapi.Code
		field string
	}{
		{fmt.Errorf("callback: %w", &sluice.FieldError{Field: "prefix", Reason: "no"}), httpapi.CodeInvalidArgument, "prefix"},
		{fmt.Errorf("%w: shop has 100", callback.ErrTooManyDestinations), httpapi.CodeConflict, ""},
	} {
		// What the server renders: apiError's answer through the registry's mapping.
		if e := httpapi.ErrorOf(t.Context(), apiError(tc.err)); e.Code != tc.code || e.Field != tc.field {
			t.Errorf("ErrorOf(apiError(%v)) = %v, want %s %q", tc.err, e, tc.code, tc.field)
		}
	}
	other := errors.New("redis down")
	if got := apiError(other); got != other { //nolint:errorlint // the very same error value, not one wrapping it
		t.Error("other errors must reach the server's mapping unchanged")
	}
}
