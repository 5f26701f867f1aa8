package tasks

import (
	"errors"
	"strings"
	"time"

	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// Errors maps the request queue's errors (package relay) to the registry: an *httpapi.Error for
// relay's sentinels, nil for any other error. The server lists it in its httpapi.ErrorMap, so
// these routes and the dashboard answer them alike; relay's field errors are the kernel's
// (invalid_argument).
func Errors(err error) *httpapi.Error {
	switch {
	case errors.Is(err, relay.ErrNotFound):
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: strings.TrimPrefix(err.Error(), "relay: "), Cause: err}
	case errors.Is(err, relay.ErrIdempotencyConflict):
		return &httpapi.Error{Code: httpapi.CodeConflict, Message: "the Idempotency-Key was used with another request (another body, method, URL, headers, priority or subject); nothing was created", Cause: err}
	case errors.Is(err, relay.ErrQueueFull):
		return &httpapi.Error{Code: httpapi.CodeQueueFull, Message: "the endpoint's queue (or the subject's share of it) is full; retry later", RetryAfter: time.Second, Cause: err}
	case errors.Is(err, relay.ErrPermitInvalid), errors.Is(err, relay.ErrPermitExpired), errors.Is(err, relay.ErrPermitUsed):
		return &httpapi.Error{Code: httpapi.CodePermitRefused, Message: strings.TrimPrefix(err.Error(), "relay: "), Cause: err}
	case errors.Is(err, relay.ErrPermitMismatch):
		return &httpapi.Error{Code: httpapi.CodePermitMismatch, Message: strings.TrimPrefix(err.Error(), "relay: "), Cause: err}
	case errors.Is(err, relay.ErrNotPermitted):
		return &httpapi.Error{Code: httpapi.CodeNotPermitted, Message: strings.TrimPrefix(err.Error(), "relay: "), Cause: err}
	case errors.Is(err, relay.ErrClosed):
		return httpapi.Unavailable(err)
	}
	return nil
}
