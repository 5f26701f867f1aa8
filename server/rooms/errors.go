package rooms

import (
	"errors"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/waitroom"
)

// Errors maps the waiting room's errors (package waitroom) to the registry: an unknown room is
// not_found, and a *waitroom.HTTPError keeps its code when the registry has it; nil for any other
// error. The server lists it in its httpapi.ErrorMap; a room's field errors are the kernel's
// (invalid_argument).
func Errors(err error) *httpapi.Error {
	var he *waitroom.HTTPError
	switch {
	case errors.Is(err, waitroom.ErrRoomNotFound):
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: "no such room", Cause: err}
	case errors.Is(err, waitroom.ErrUpdateConflict):
		return &httpapi.Error{Code: httpapi.CodeConflict, Message: "the room's settings kept changing under this change; nothing changed, try again", Cause: err}
	case errors.As(err, &he):
		e := &httpapi.Error{Code: httpapi.Code(he.Code), Message: he.Message, RetryAfter: he.RetryAfter, Cause: err}
		if e.Status() != 0 {
			return e
		}
	}
	return nil
}
