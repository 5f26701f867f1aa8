package jobs

import (
	"errors"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// Errors maps the job queue's errors (package queue) to the registry: an *httpapi.Error for the
// queue's sentinels, nil for any other error. The server lists it in its httpapi.ErrorMap, so
// every route that calls the queue (these, lmstfy's, the dashboard's) answers them alike; the
// queue's field errors are the kernel's (invalid_argument).
func Errors(err error) *httpapi.Error {
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: "not found", Cause: err}
	case errors.Is(err, queue.ErrLeaseLost):
		return &httpapi.Error{Code: httpapi.CodeLeaseLost, Message: "the delivery no longer holds the lease (it expired or a later delivery took the job)", Cause: err}
	case errors.Is(err, queue.ErrNotReplicated):
		return &httpapi.Error{Code: httpapi.CodeNotReplicated, Message: "the job is on the Redis primary but fewer replicas than replica_acks acknowledged it in time; publishing again adds a second job unless it has a unique_key", RetryAfter: time.Second, Cause: err}
	case errors.Is(err, queue.ErrClosed):
		return httpapi.Unavailable(err)
	}
	return nil
}
