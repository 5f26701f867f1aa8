package queue

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound means the job (or queue entry) does not exist: it never did, or it was acked,
	// deleted, expired or trimmed.
	ErrNotFound = errors.New("queue: not found")

	// ErrLeaseLost means an ack, nack, touch or release named a delivery that no longer holds the
	// job's lease: the lease expired (the job may already be with another consumer) or a later
	// delivery took it. Nothing was changed.
	ErrLeaseLost = errors.New("queue: lease lost")

	// ErrNotReplicated means fewer replicas than Config.ReplicaAcks acknowledged a publish within
	// Config.ReplicaAckTimeout. The job is on the primary and will run unless the primary fails
	// before a replica has it; publishing again adds a second job unless it carries a UniqueKey.
	ErrNotReplicated = errors.New("queue: not acknowledged by enough replicas")

	// ErrInvalidArgument is matched (errors.Is) by every *ValidationError.
	ErrInvalidArgument = errors.New("queue: invalid argument")
)

// ValidationError reports a bad argument; Field names it as the caller wrote it (jobs[2].priority).
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("queue: invalid %s: %s", e.Field, e.Message)
}

// Is makes errors.Is(err, ErrInvalidArgument) true for validation errors.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidArgument }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// inField prefixes the field of a validation error (jobs[3] + .priority).
func inField(prefix string, err error) error {
	var v *ValidationError
	if errors.As(err, &v) {
		return &ValidationError{Field: prefix + "." + v.Field, Message: v.Message}
	}
	return err
}
