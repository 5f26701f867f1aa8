package cache

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned by a loader when the key does not exist in the source of truth; the
	// Store caches that answer for Config.EmptyTTL and Get returns ErrNotFound.
	ErrNotFound = errors.New("cache: not found")
	// ErrWaitTimeout is returned when another process's load of the key did not land within
	// Config.WaitTimeout.
	ErrWaitTimeout = errors.New("cache: timed out waiting for another load")
	// ErrLoaderPanic wraps the value a loader panicked with.
	ErrLoaderPanic = errors.New("cache: loader panicked")
	// ErrClosed is returned by calls on a closed Store.
	ErrClosed = errors.New("cache: store closed")
)

// redisError marks a failure of Redis (as opposed to the loader), which Config.OnRedisError
// governs.
type redisError struct{ err error }

func (e *redisError) Error() string { return fmt.Sprintf("cache: redis: %v", e.err) }
func (e *redisError) Unwrap() error { return e.err }

func wrapRedis(err error) error {
	if err == nil {
		return nil
	}
	var re *redisError
	if errors.As(err, &re) {
		return err
	}
	return &redisError{err: err}
}

func isRedisError(err error) bool {
	var re *redisError
	return errors.As(err, &re)
}
