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
	"github.com/sluicehq/sluice/server/tenant"
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
	// CodePermitMismatch: a permit presented for a call it does not admit (another endpoint's
	// gateway, a method or path outside the endpoint's bindings).
	CodePermitMismatch Code = "permit_mismatch"
	CodeNotPermitted   Code = "not_permitted"
	CodeInternal       Code = "internal"
	CodeUnavailable    Code = "unavailable"
	// CodeUpstreamUnavailable: a waiting room's reverse proxy could not reach its upstream, or the
	// room has none.
	CodeUpstreamUnavailable Code = "upstream_unavailable"
	CodeNotReplicated       Code = "not_replicated"
	// The admin listener's refusals of what only a web page would send (internal/adminguard).
	CodeAdminHostRefused        Code = "admin_host_refused"
	CodeAdminOriginRefused      Code = "admin_origin_refused"
	CodeAdminContentTypeRefused Code = "admin_content_type_refused"
	// CodeAdminCallbackRefused: a callback Sluice sent (webhook-id) reached the admin listener.
	CodeAdminCallbackRefused Code = "admin_callback_refused"
	// CodeAuthBackoff: the client's address made too many failed authentications and must wait
	// (Retry-After) before its credentials are checked again (server/internal/authguard).
	CodeAuthBackoff Code = "auth_backoff"
	// CodeQuotaExceeded: the namespace holds all that one of its quotas allows; Field names the
	// quota (max_queues, max_stored_jobs, ...).
	CodeQuotaExceeded Code = "quota_exceeded"
	// CodeTooManyLargeResponses: the client's address is receiving as many large answers at once
	// as the server allows one address; retry after Retry-After.
	CodeTooManyLargeResponses Code = "too_many_large_responses"
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
	CodeAdminCallbackRefused:    http.StatusForbidden,
	CodeQueueFull:               http.StatusConflict,
	CodePermitRefused:           http.StatusForbidden,
	CodePermitMismatch:          http.StatusForbidden,
	CodeNotPermitted:            http.StatusConflict,
	CodeAuthBackoff:             http.StatusTooManyRequests,
	CodeQuotaExceeded:           http.StatusTooManyRequests,
	CodeTooManyLargeResponses:   http.StatusTooManyRequests,
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

// InvalidArg returns an invalid_argument error naming a field, its message formatted with every
// string argument shortened to sluice.MaxEcho bytes (the arguments are often the refused input).
func InvalidArg(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Field: field, Message: sluice.Sprintf(format, args...)}
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

// ErrorMapper turns the errors of one system's library into the registry's: an *Error for an
// error it knows, nil for any other. Each system's route package exports one (jobs.Errors for
// the queue's, tasks.Errors for the request queue's, rooms.Errors for the waiting room's), so
// that the kernel knows no system.
type ErrorMapper func(error) *Error

// ErrorMap is how a server answers errors: the kernel's own cases, and the mappers of the systems
// it mounts, asked in order. The server builds it once and puts it in every request's state
// (RequestState.Errors), where ErrorOf and WriteError find it, so a route of one system that
// meets another's error (the dashboard, lmstfy's API on the queue) answers it alike.
type ErrorMap []ErrorMapper

// Of turns any error into the registry's *Error: an *Error as it is; a *sluice.FieldError as
// invalid_argument naming the field; tenancy's errors; then the answer of the first mapper that
// knows err; then body-size errors (payload_too_large), a store that cannot serve now
// (unavailable) and, for anything else, internal.
func (m ErrorMap) Of(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var fe *sluice.FieldError
	var tnf *tenant.NotFoundError
	var qe *sluice.QuotaError
	switch {
	case errors.As(err, &fe):
		return &Error{Code: CodeInvalidArgument, Field: fe.Field, Message: fe.Reason, Cause: err}
	case errors.As(err, &qe):
		return &Error{Code: CodeQuotaExceeded, Field: qe.Quota, Message: qe.Error() + "; nothing was created", Cause: err}
	case errors.Is(err, tenant.ErrTokenExists):
		return &Error{Code: CodeConflict, Message: "a token with this secret exists already (in this or another namespace); nothing changed", Cause: err}
	case errors.Is(err, tenant.ErrNamespaceDeleting):
		return &Error{Code: CodeConflict, Message: "the namespace is being deleted (GET /v1/namespaces/{ns} on the admin API shows the progress); retry once it is gone", Cause: err}
	case errors.Is(err, tenant.ErrUnauthenticated):
		return &Error{Code: CodeUnauthenticated, Message: ErrUnauthenticated.Message, Cause: err}
	case errors.As(err, &tnf):
		return &Error{Code: CodeNotFound, Message: tnf.Message, Cause: err}
	}
	for _, mapErr := range m {
		if e := mapErr(err); e != nil {
			return e
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &Error{Code: CodePayloadTooLarge, Message: fmt.Sprintf("the request body is over the limit of %d bytes", tooBig.Limit), Cause: err}
	case IsUnavailable(err):
		return Unavailable(err)
	default:
		return &Error{Code: CodeInternal, Message: "internal error", Cause: err}
	}
}

// ErrorOf turns err into the registry's *Error with the ErrorMap of ctx's request; outside a
// request the server serves, with the kernel's own cases only.
func ErrorOf(ctx context.Context, err error) *Error {
	var m ErrorMap
	if st := StateOf(ctx); st != nil {
		m = st.Errors
	}
	return m.Of(err)
}

// Unavailable is the answer to err when it means the store (or the client of a system) cannot
// serve now: 503 unavailable, retry in a second.
func Unavailable(err error) *Error {
	return &Error{Code: CodeUnavailable, Message: ErrUnavailable.Message, RetryAfter: time.Second, Cause: err}
}

// IsUnavailable reports whether err means the store could not be reached or cannot serve now.
// A system's own "closed" error is its ErrorMapper's to answer (with Unavailable).
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	var rerr redis.Error
	switch {
	case errors.Is(err, redis.ErrClosed),
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
	e := ErrorFor(r, err)
	if e == nil {
		return
	}
	SetRetryAfter(w, e.RetryAfter)
	WriteJSON(w, e.Status(), ErrorBody{Error: ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field}})
}

// ErrorFor is the registry's answer to err on request r, noted in the request's state (which the
// access log and the metrics read): what every writer of an error shape (this package's, lmstfy's,
// the dashboard's pages) answers. It is nil when the client went away (ClientGone): such a request
// gets no answer.
func ErrorFor(r *http.Request, err error) *Error {
	if ClientGone(r, err) {
		return nil
	}
	e := bounded(ErrorOf(r.Context(), err))
	if st := StateOf(r.Context()); st != nil {
		st.NoteError(r.Context(), e, err)
	}
	return e
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

// maxMessage caps an error's message in bytes. Messages that quote an input quote it shortened
// (sluice.Shorten); this is the guard for one that quotes it whole ("no queue <1 MB name>").
const maxMessage = 4 * sluice.MaxEcho

// bounded returns e, or a copy of it whose field and message are cut to what an error body may
// echo: each run of non-space bytes over sluice.MaxEcho is shortened, then the whole message is
// cut to maxMessage bytes. So no error body echoes more than about MaxEcho bytes of one input.
func bounded(e *Error) *Error {
	msg, field := e.Message, sluice.Shorten(e.Field)
	if len(msg) > sluice.MaxEcho {
		msg = shortenRuns(msg)
	}
	if len(msg) > maxMessage {
		msg = strings.ToValidUTF8(msg[:maxMessage], "") + "…"
	}
	if msg == e.Message && field == e.Field {
		return e
	}
	c := *e
	c.Message, c.Field = msg, field
	return &c
}

// shortenRuns shortens (sluice.Shorten) each run of non-space bytes of s longer than
// sluice.MaxEcho.
func shortenRuns(s string) string {
	var b strings.Builder
	for s != "" {
		end := strings.IndexByte(s, ' ')
		if end < 0 {
			end = len(s)
		}
		if run := s[:end]; strings.Contains(run, "…(") && len(run) <= sluice.MaxEcho+32 {
			b.WriteString(run) // shortened already: "<MaxEcho bytes>…(N bytes)"
		} else {
			b.WriteString(sluice.Shorten(run))
		}
		if end < len(s) {
			b.WriteByte(' ')
			end++
		}
		s = s[end:]
	}
	return b.String()
}
