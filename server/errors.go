package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
)

// Code is a stable machine-readable error code of the native API.
type Code string

// The error registry: every error the native and admin APIs return has one of these codes, and
// each code has one HTTP status.
const (
	CodeInvalidArgument  Code = "invalid_argument"
	CodeUnauthenticated  Code = "unauthenticated"
	CodePermissionDenied Code = "permission_denied"
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodeLeaseLost        Code = "lease_lost"
	CodeConflict         Code = "conflict"
	CodePayloadTooLarge  Code = "payload_too_large"
	CodeRateLimited      Code = "rate_limited"
	CodeInternal         Code = "internal"
	CodeUnavailable      Code = "unavailable"
)

// statusOf maps each code to its HTTP status.
var statusOf = map[Code]int{
	CodeInvalidArgument:  http.StatusBadRequest,
	CodeUnauthenticated:  http.StatusUnauthorized,
	CodePermissionDenied: http.StatusForbidden,
	CodeNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeLeaseLost:        http.StatusConflict,
	CodeConflict:         http.StatusConflict,
	CodePayloadTooLarge:  http.StatusRequestEntityTooLarge,
	CodeRateLimited:      http.StatusTooManyRequests,
	CodeInternal:         http.StatusInternalServerError,
	CodeUnavailable:      http.StatusServiceUnavailable,
}

// Sentinel errors of the server, matched with errors.Is.
var (
	ErrUnauthenticated  = &Error{Code: CodeUnauthenticated, Message: "missing or unknown token"}
	ErrPermissionDenied = &Error{Code: CodePermissionDenied, Message: "the token does not allow this"}
	ErrNotFound         = &Error{Code: CodeNotFound, Message: "not found"}
	ErrUnavailable      = &Error{Code: CodeUnavailable, Message: "the store is unavailable; retry later"}
)

// Error is an API error: a registry code, a message for people and, for invalid arguments, the
// field at fault. Handlers return it (or errors the writer maps to it).
type Error struct {
	Code    Code
	Message string
	// Field names the request field at fault (invalid_argument).
	Field string
	// RetryAfter is sent as the Retry-After header (rate_limited, unavailable). 0: none.
	RetryAfter time.Duration
	// cause is the error behind it, for logs.
	cause error
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return string(e.Code) + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// Is matches errors of the same code, so errors.Is(err, ErrNotFound) holds for every not_found.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Status is the HTTP status of the error.
func (e *Error) Status() int { return statusOf[e.Code] }

// invalidArg returns an invalid_argument error naming a field.
func invalidArg(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON shape of every native error.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// apiError turns any error into the registry's *Error: the queue's sentinels and validation
// errors, body-size errors, Redis failures (unavailable) and, for anything else, internal.
func apiError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var v *queue.ValidationError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &v):
		return &Error{Code: CodeInvalidArgument, Field: v.Field, Message: v.Message, cause: err}
	case errors.Is(err, queue.ErrNotFound):
		return &Error{Code: CodeNotFound, Message: "not found", cause: err}
	case errors.Is(err, queue.ErrLeaseLost):
		return &Error{Code: CodeLeaseLost, Message: "the delivery no longer holds the lease (it expired or a later delivery took the job)", cause: err}
	case errors.As(err, &tooBig):
		return &Error{Code: CodePayloadTooLarge, Message: fmt.Sprintf("the request body is over the limit of %d bytes", tooBig.Limit), cause: err}
	case isUnavailable(err):
		return &Error{Code: CodeUnavailable, Message: ErrUnavailable.Message, RetryAfter: time.Second, cause: err}
	default:
		return &Error{Code: CodeInternal, Message: "internal error", cause: err}
	}
}

// isUnavailable reports whether err means the store could not be reached or cannot serve now.
func isUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	var rerr redis.Error
	switch {
	case errors.Is(err, redis.ErrClosed), errors.Is(err, queue.ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &netErr):
		return true
	case errors.As(err, &rerr):
		// Error replies that mean the store cannot take valid requests now. Any other error reply
		// (a script error, WRONGTYPE, ...) is a bug or a damaged key: internal, and logged.
		for _, prefix := range unavailableReplies {
			if redis.HasErrorPrefix(err, prefix) {
				return true
			}
		}
	}
	return false
}

// unavailableReplies are the Redis error replies of a store that cannot serve for now: loading,
// failing over, a read-only replica, a cluster without a quorum, out of memory, a busy script.
var unavailableReplies = []string{
	"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM", "NOREPLICAS",
	"MISCONF", "NOTBUSY",
}

// writeError renders err in the native shape with its registry status, and logs internal and
// unavailable errors with the request id. A request whose client went away gets no body.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	e := apiError(err)
	if st := stateOf(r.Context()); st != nil {
		st.noteError(r.Context(), e, err)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((e.RetryAfter+time.Second-1)/time.Second))))
	}
	writeJSON(w, e.Status(), errorBody{Error: errorDetail{Code: e.Code, Message: e.Message, Field: e.Field}})
}

// writeJSON writes v as the JSON body with status. The body is encoded into a pooled buffer
// first, so it goes out in one write with its Content-Length, and a value that cannot be encoded
// is a clean 500 rather than half a body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := getBuffer()
	defer putBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "internal error: response could not be encoded", http.StatusInternalServerError)
		return
	}
	writeBody(w, status, "application/json", buf.Bytes())
}

// writeBody writes a complete body with its Content-Type and Content-Length.
func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
