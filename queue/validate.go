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

// trimIndex turns "jobs[0].priority" into "priority".
func trimIndex(field string) string {
	if strings.HasPrefix(field, "jobs[") {
		if _, rest, ok := strings.Cut(field, "]."); ok {
			return rest
		}
	}
	return field
}
