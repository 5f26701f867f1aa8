package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/server/tenant"
)

// TestErrorOfMapsKernelErrors: the errors every route meets (field errors of any package,
// tenancy's, registry errors) come out as the registry's codes, with the field and message they
// carry, with or without a request's ErrorMap.
func TestErrorOfMapsKernelErrors(t *testing.T) {
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
		{&Error{Code: CodeConflict, Message: "taken"}, CodeConflict, "", "taken"},
		{errors.New("boom"), CodeInternal, "", "internal error"},
	} {
		e := ErrorOf(context.Background(), tc.err)
		if e.Code != tc.code || e.Field != tc.field || e.Message != tc.message {
			t.Errorf("ErrorOf(%v) = %+v, want %s %q %q", tc.err, e, tc.code, tc.field, tc.message)
		}
		if e := (ErrorMap{mapAll}).Of(tc.err); tc.code != CodeInternal && (e.Code != tc.code || e.Field != tc.field) {
			t.Errorf("ErrorMap.Of(%v) = %+v: a system's mapper came before the kernel's case", tc.err, e)
		}
	}
}

// mapAll answers every error as a conflict, as no real mapper would.
func mapAll(err error) *Error { return &Error{Code: CodeConflict, Message: "mapAll", Cause: err} }

// TestErrorMapAsksEachSystem: a system's error gets the answer of the first mapper that knows it;
// one no mapper knows is internal (or unavailable, for a store that cannot serve); ErrorOf and
// WriteError use the map of the request's state.
func TestErrorMapAsksEachSystem(t *testing.T) {
	t.Parallel()
	errFull := errors.New("sys: full")
	errGone := errors.New("sys: gone")
	calls := 0
	first := func(err error) *Error {
		calls++
		if errors.Is(err, errFull) {
			return &Error{Code: CodeQueueFull, Message: "full", RetryAfter: time.Second, Cause: err}
		}
		return nil
	}
	second := func(err error) *Error {
		switch {
		case errors.Is(err, errGone):
			return &Error{Code: CodeNotFound, Message: "gone", Cause: err}
		case errors.Is(err, errFull):
			t.Error("the second mapper was asked about an error the first one knew")
		}
		return nil
	}
	m := ErrorMap{first, second}
	for _, tc := range []struct {
		err     error
		code    Code
		message string
	}{
		{fmt.Errorf("submit: %w", errFull), CodeQueueFull, "full"},
		{errGone, CodeNotFound, "gone"},
		{errors.New("boom"), CodeInternal, "internal error"},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), CodeUnavailable, ErrUnavailable.Message},
		{&http.MaxBytesError{Limit: 10}, CodePayloadTooLarge, "the request body is over the limit of 10 bytes"},
	} {
		if e := m.Of(tc.err); e.Code != tc.code || e.Message != tc.message || !errors.Is(e, tc.err) {
			t.Errorf("Of(%v) = %+v, want %s %q with the error as its cause", tc.err, e, tc.code, tc.message)
		}
	}
	if calls != 5 {
		t.Errorf("the first mapper was asked %d times, want 5 (once for each error the kernel does not know)", calls)
	}

	if e := ErrorOf(context.Background(), errGone); e.Code != CodeInternal {
		t.Errorf("ErrorOf outside a request = %+v, want internal (no map)", e)
	}
	st := &RequestState{Log: slog.New(slog.DiscardHandler), Errors: m}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r = r.WithContext(WithState(r.Context(), st))
	if e := ErrorOf(r.Context(), errGone); e.Code != CodeNotFound {
		t.Errorf("ErrorOf in a request = %+v, want the map's not_found", e)
	}
	rec := httptest.NewRecorder()
	WriteError(rec, r, errFull)
	want := `{"error":{"code":"queue_full","message":"full"}}` + "\n"
	if rec.Code != http.StatusConflict || rec.Header().Get("Retry-After") != "1" || rec.Body.String() != want || st.Code != CodeQueueFull {
		t.Errorf("WriteError = %d (Retry-After %q) %s, state code %q; want 409 (1) %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body, st.Code, want)
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

// An error whose message or field quotes a huge input whole is written with it cut: each long run
// shortened, the whole message capped.
func TestWriteErrorEchoesLittleOfAnyInput(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 1<<20)
	for name, err := range map[string]error{
		"one run":   &Error{Code: CodeNotFound, Message: "no queue " + huge + " in namespace shop"},
		"spaced":    &Error{Code: CodeNotFound, Message: strings.Repeat("x ", 1<<19)},
		"field":     InvalidArg(huge, "unknown field"),
		"formatted": InvalidArg("queue", "%q is not a name", huge),
	} {
		rec := httptest.NewRecorder()
		WriteError(rec, httptest.NewRequest(http.MethodGet, "/", nil), err)
		var b ErrorBody
		if jerr := json.Unmarshal(rec.Body.Bytes(), &b); jerr != nil || rec.Body.Len() > 1200 {
			t.Errorf("%s: %d bytes %.300s (%v)", name, rec.Body.Len(), rec.Body, jerr)
		}
	}
	if e := ErrNotFound; bounded(e) != e || e.Message != "not found" {
		t.Errorf("bounded changed or copied a short sentinel: %+v", e)
	}
}
