package queue

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice"
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
)

// invalid is the package's refusal of a bad argument: a *sluice.FieldError naming the field as
// the caller wrote it (jobs[2].priority), matched by errors.Is(err, sluice.ErrInvalid).
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("queue: invalid %w", sluice.Invalid(field, format, args...))
}

// inField prefixes the field of a refused argument (jobs[3] + .priority).
func inField(prefix string, err error) error {
	var v *sluice.FieldError
	if errors.As(err, &v) {
		return invalid(prefix+"."+v.Field, "%s", v.Reason)
	}
	return err
}
