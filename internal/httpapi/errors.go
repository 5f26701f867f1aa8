package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/tenant"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/waitroom"
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
	CodeQueueFull        Code = "queue_full"
	CodePermitRefused    Code = "permit_refused"
	CodeNotPermitted     Code = "not_permitted"
	CodeInternal         Code = "internal"
	CodeUnavailable      Code = "unavailable"
	// CodeUpstreamUnavailable: a waiting room's reverse proxy could not reach its upstream, or the
	// room has none.
	CodeUpstreamUnavailable Code = "upstream_unavailable"
	CodeNotReplicated       Code = "not_replicated"
	// The admin listener's refusals of what only a web page would send (internal/adminguard).
	CodeAdminHostRefused        Code = "admin_host_refused"
	CodeAdminOriginRefused      Code = "admin_origin_refused"
	CodeAdminContentTypeRefused Code = "admin_content_type_refused"
)

// statusOf maps each code to its HTTP status.
var statusOf = map[Code]int{
	CodeInvalidArgument:     http.StatusBadRequest,
	CodeUnauthenticated:     http.StatusUnauthorized,
	CodePermissionDenied:    http.StatusForbidden,
	CodeNotFound:            http.StatusNotFound,
	CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
	CodeLeaseLost:           http.StatusConflict,
	CodeConflict:            http.StatusConflict,
	CodePayloadTooLarge:     http.StatusRequestEntityTooLarge,
	CodeRateLimited:         http.StatusTooManyRequests,
	CodeInternal:            http.StatusInternalServerError,
	CodeUnavailable:         http.StatusServiceUnavailable,
	CodeUpstreamUnavailable: http.StatusBadGateway,
	CodeNotReplicated:       http.StatusServiceUnavailable,

	CodeAdminHostRefused:        http.StatusForbidden,
	CodeAdminOriginRefused:      http.StatusForbidden,
	CodeAdminContentTypeRefused: http.StatusForbidden,
	CodeQueueFull:               http.StatusConflict,
	CodePermitRefused:           http.StatusForbidden,
	CodeNotPermitted:            http.StatusConflict,
}

// Sentinel errors, matched with errors.Is.
var (
	ErrUnauthenticated  = &Error{Code: CodeUnauthenticated, Message: "missing or unknown token"}
	ErrPermissionDenied = &Error{Code: CodePermissionDenied, Message: "the token does not allow this"}
	ErrNotFound         = &Error{Code: CodeNotFound, Message: "not found"}
	ErrUnavailable      = &Error{Code: CodeUnavailable, Message: "the store is unavailable; retry later"}
)

// Error is an API error: a registry code, a message for people and, for invalid arguments, the
// field at fault. Handlers return it (or errors ErrorOf maps to it).
type Error struct {
	Code    Code
	Message string
	// Field names the request field at fault (invalid_argument).
	Field string
	// RetryAfter is sent as the Retry-After header (rate_limited, unavailable). 0: none.
	RetryAfter time.Duration
	// Cause is the error behind it, for logs.
	Cause error
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return string(e.Code) + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is matches errors of the same code, so errors.Is(err, ErrNotFound) holds for every not_found.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Status is the HTTP status of the error.
func (e *Error) Status() int { return statusOf[e.Code] }

// InvalidArg returns an invalid_argument error naming a field.
func InvalidArg(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorBody is the JSON shape of every native error.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the "error" member of ErrorBody.
type ErrorDetail struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// ErrorOf turns any error into the registry's *Error: the queue's and tenancy's sentinels and
// validation errors, body-size errors, Redis failures (unavailable) and, for anything else,
// internal. A system whose package has errors of its own adds its case here, so that every
// route renders them alike.
func ErrorOf(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var fe *sluice.FieldError
	var tnf *tenant.NotFoundError
	var tooBig *http.MaxBytesError
	var whe *waitroom.HTTPError
	switch {
	case errors.As(err, &fe):
		return &Error{Code: CodeInvalidArgument, Field: fe.Field, Message: fe.Reason, Cause: err}
	case errors.Is(err, tenant.ErrTokenExists):
		return &Error{Code: CodeConflict, Message: "a token with this secret exists already (in this or another namespace); nothing changed", Cause: err}
	case errors.Is(err, tenant.ErrUnauthenticated):
		return &Error{Code: CodeUnauthenticated, Message: ErrUnauthenticated.Message, Cause: err}
	case errors.As(err, &tnf):
		return &Error{Code: CodeNotFound, Message: tnf.Message, Cause: err}
	case errors.Is(err, queue.ErrNotFound):
		return &Error{Code: CodeNotFound, Message: "not found", Cause: err}
	case errors.Is(err, waitroom.ErrRoomNotFound):
		return &Error{Code: CodeNotFound, Message: "no such room", Cause: err}
	case errors.As(err, &whe) && statusOf[Code(whe.Code)] != 0:
		return &Error{Code: Code(whe.Code), Message: whe.Message, RetryAfter: whe.RetryAfter, Cause: err}
	case errors.Is(err, queue.ErrLeaseLost):
		return &Error{Code: CodeLeaseLost, Message: "the delivery no longer holds the lease (it expired or a later delivery took the job)", Cause: err}
	case errors.Is(err, queue.ErrNotReplicated):
		return &Error{Code: CodeNotReplicated, Message: "the job is on the Redis primary but fewer replicas than replica_acks acknowledged it in time; publishing again adds a second job unless it has a unique_key", RetryAfter: time.Second, Cause: err}
	case errors.Is(err, relay.ErrNotFound):
		return &Error{Code: CodeNotFound, Message: strings.TrimPrefix(err.Error(), "relay: "), Cause: err}
	case errors.Is(err, relay.ErrQueueFull):
		return &Error{Code: CodeQueueFull, Message: "the endpoint's queue (or the subject's share of it) is full; retry later", RetryAfter: time.Second, Cause: err}
	case errors.Is(err, relay.ErrPermitInvalid), errors.Is(err, relay.ErrPermitExpired), errors.Is(err, relay.ErrPermitUsed):
		return &Error{Code: CodePermitRefused, Message: strings.TrimPrefix(err.Error(), "relay: "), Cause: err}
	case errors.Is(err, relay.ErrNotPermitted):
		return &Error{Code: CodeNotPermitted, Message: strings.TrimPrefix(err.Error(), "relay: "), Cause: err}
	case errors.Is(err, relay.ErrClosed):
		return &Error{Code: CodeUnavailable, Message: ErrUnavailable.Message, RetryAfter: time.Second, Cause: err}
	case errors.As(err, &tooBig):
		return &Error{Code: CodePayloadTooLarge, Message: fmt.Sprintf("the request body is over the limit of %d bytes", tooBig.Limit), Cause: err}
	case IsUnavailable(err):
		return &Error{Code: CodeUnavailable, Message: ErrUnavailable.Message, RetryAfter: time.Second, Cause: err}
	default:
		return &Error{Code: CodeInternal, Message: "internal error", Cause: err}
	}
}

// IsUnavailable reports whether err means the store could not be reached or cannot serve now.
func IsUnavailable(err error) bool {
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

// WriteError renders err in the native shape with its registry status, and logs internal and
// unavailable errors with the request id. A request whose client went away gets no body.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if ClientGone(r, err) {
		return
	}
	e := ErrorOf(err)
	if st := StateOf(r.Context()); st != nil {
		st.NoteError(r.Context(), e, err)
	}
	SetRetryAfter(w, e.RetryAfter)
	WriteJSON(w, e.Status(), ErrorBody{Error: ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field}})
}

// ClientGone reports whether err only says that the request's client went away: such a request
// gets no answer.
func ClientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil && errors.Is(err, context.Canceled)
}

// SetRetryAfter sets the Retry-After header to d in whole seconds (at least 1); 0 sets nothing.
func SetRetryAfter(w http.ResponseWriter, d time.Duration) {
	if d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((d+time.Second-1)/time.Second))))
	}
}
