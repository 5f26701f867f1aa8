package waitroom

import (
	"errors"
	"net/http"
	"time"
)

// HTTPError is an error the handlers answer with its own HTTP status and stable code.
type HTTPError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, when above 0, is when to ask again (the handlers also set Retry-After).
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string { return e.Message }

// The stable codes the handlers answer with: those of the server's error registry, so a room's
// routes answer like every other route (the server renders them with its own writer).
const (
	CodeNotFound            = "not_found"
	CodeRateLimited         = "rate_limited"
	CodeUnavailable         = "unavailable"
	CodeUpstreamUnavailable = "upstream_unavailable"
)

// ErrorCode maps an error of this package to its HTTP status and stable code.
func ErrorCode(err error) (status int, code string) {
	var he *HTTPError
	switch {
	case errors.As(err, &he):
		return he.Status, he.Code
	case errors.Is(err, ErrRoomNotFound):
		return http.StatusNotFound, CodeNotFound
	}
	// Everything else the handlers return is a Redis call that failed (or the request ended).
	return http.StatusServiceUnavailable, CodeUnavailable
}

// WriteError renders err as {"error":{"code":...,"message":...}} with its status: the default
// error writer of the handlers.
func WriteError(w http.ResponseWriter, _ *http.Request, err error) {
	status, code := ErrorCode(err)
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": err.Error()}})
}
