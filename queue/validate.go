package queue

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Short names for the go-redis pipeline types the engine passes around.
type (
	redisPipeliner = redis.Pipeliner
	redisCmd       = redis.Cmd
)

func asValidation(err error, v **ValidationError) bool { return errors.As(err, v) }

// trimIndex turns "jobs[0].priority" into "priority": single calls name fields without the batch
// index the batch call they wrap adds.
func trimIndex(field string) string {
	if i := strings.Index(field, "]."); i > 0 && strings.Contains(field[:i], "[") {
		return field[i+2:]
	}
	return field
}

// single unwraps a batch call's validation error for the single call that made it.
func single(err error) error {
	var v *ValidationError
	if asValidation(err, &v) {
		return &ValidationError{Field: trimIndex(v.Field), Message: v.Message}
	}
	return err
}
