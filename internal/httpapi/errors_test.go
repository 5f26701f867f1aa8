package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/tenant"
	"github.com/sluicehq/sluice/queue"
)

// TestErrorOfMapsLibraryErrors: the errors of the libraries the routes call come out as the
// registry's codes, with the field and message they carry.
func TestErrorOfMapsLibraryErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err     error
		code    Code
		field   string
		message string
	}{
		{&sluice.FieldError{Field: "namespace", Reason: "bad"}, CodeInvalidArgument, "namespace", "bad"},
		{fmt.Errorf("wrapped: %w", &tenant.NotFoundError{Message: "no namespace x"}), CodeNotFound, "", "no namespace x"},
		{tenant.ErrUnauthenticated, CodeUnauthenticated, "", "missing or unknown token"},
		{fmt.Errorf("queue: invalid %w", &sluice.FieldError{Field: "priority", Reason: "too high"}), CodeInvalidArgument, "priority", "too high"},
		{queue.ErrNotFound, CodeNotFound, "", "not found"},
		{&Error{Code: CodeConflict, Message: "taken"}, CodeConflict, "", "taken"},
		{errors.New("boom"), CodeInternal, "", "internal error"},
	} {
		e := ErrorOf(tc.err)
		if e.Code != tc.code || e.Field != tc.field || e.Message != tc.message {
			t.Errorf("ErrorOf(%v) = %+v, want %s %q %q", tc.err, e, tc.code, tc.field, tc.message)
		}
	}
}

// TestWriteErrorShape: the one native error shape, with the code's status.
func TestWriteErrorShape(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	WriteError(rec, httptest.NewRequest(http.MethodGet, "/", nil), InvalidArg("ttl", "must be at least %d", 1))
	want := `{"error":{"code":"invalid_argument","message":"must be at least 1","field":"ttl"}}` + "\n"
	if rec.Code != http.StatusBadRequest || rec.Body.String() != want {
		t.Fatalf("got %d %s, want 400 %s", rec.Code, rec.Body, want)
	}
}
