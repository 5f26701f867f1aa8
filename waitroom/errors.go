package waitroom

import (
	"context"
	"errors"
	"net/http"
)

// HTTPError is an error the handlers answer with its own HTTP status and stable code.
type HTTPError struct {
	Status  int
	Code    string
	Message string
}

func (e *HTTPError) Error() string { return e.Message }

// The stable codes the handlers answer with (the server registers them in its error registry).
const (
	CodeRoomNotFound     = "room_not_found"
	CodeTooManyPolls     = "too_many_requests"
	CodeRedisUnavailable = "waitroom_unavailable"
	CodeNoUpstream       = "room_upstream_not_configured"
	CodeUpstreamFailed   = "upstream_unreachable"
	CodeInvalidRoomName  = "invalid_room_name"
	CodeInternal         = "internal_error"
)

// ErrorCode maps an error of this package to its HTTP status and stable code.
func ErrorCode(err error) (status int, code string) {
	var he *HTTPError
	switch {
	case errors.As(err, &he):
		return he.Status, he.Code
	case errors.Is(err, ErrRoomNotFound):
		return http.StatusNotFound, CodeRoomNotFound
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, CodeRedisUnavailable
	}
	return http.StatusServiceUnavailable, CodeRedisUnavailable
}

// WriteError renders err as {"error":{"code":...,"message":...}} with its status: the default
// error writer of the handlers.
func WriteError(w http.ResponseWriter, _ *http.Request, err error) {
	status, code := ErrorCode(err)
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": err.Error()}})
}
