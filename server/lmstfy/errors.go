package lmstfy

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// Error is an answer in lmstfy's error shape: Status with {"error": Message}.
type Error struct {
	Status  int
	Message string
	// key is the body's member: "error" unless set (the throttler answers with "msg").
	key string
	// null makes the body JSON null (lmstfy's answer to reading a limit that is not there).
	null bool
}

func (e *Error) Error() string { return fmt.Sprintf("lmstfy: %d %s", e.Status, e.Message) }

// errorf returns an Error with lmstfy's status and message.
func errorf(status int, msg string) *Error { return &Error{Status: status, Message: msg} }

// code is the registry code an lmstfy status counts as in the server's metrics and logs.
func (e *Error) code() httpapi.Code {
	switch e.Status {
	case http.StatusUnauthorized:
		return httpapi.CodeUnauthenticated
	case http.StatusForbidden:
		return httpapi.CodePermissionDenied
	case http.StatusNotFound:
		return httpapi.CodeNotFound
	case http.StatusRequestEntityTooLarge:
		return httpapi.CodePayloadTooLarge
	case http.StatusTooManyRequests:
		return httpapi.CodeRateLimited
	}
	return httpapi.CodeInvalidArgument
}

// adapt turns a handler that returns errors into an http.HandlerFunc that renders them.
func adapt(h httpapi.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, r, err)
		}
	}
}

// writeError renders err in lmstfy's shape. An *Error is the caller's mistake, answered as is.
// Anything else is a failure that is not the caller's (Redis down, a bug): the server's registry
// gives its status (500, or 503 with Retry-After while Redis is unreachable) and logs it, and
// the body is lmstfy's {"error": msg}. A request whose client went away gets no answer.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var le *Error
	if errors.As(err, &le) {
		if st := httpapi.StateOf(r.Context()); st != nil {
			st.Code = le.code()
		}
		if le.null {
			httpapi.WriteJSON(w, le.Status, nil)
			return
		}
		key := le.key
		if key == "" {
			key = "error"
		}
		httpapi.WriteJSON(w, le.Status, map[string]string{key: le.Message})
		return
	}
	e := httpapi.ErrorFor(r, err)
	if e == nil {
		return
	}
	msg := e.Message
	switch e.Code {
	case httpapi.CodeInternal:
		msg = "internal error"
	case httpapi.CodeInvalidArgument:
		msg = "invalid " + e.Field + ": " + e.Message
	}
	httpapi.SetRetryAfter(w, e.RetryAfter)
	httpapi.WriteJSON(w, e.Status(), map[string]string{"error": msg})
}
