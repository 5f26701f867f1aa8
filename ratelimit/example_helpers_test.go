package ratelimit_test

import (
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// exampleRedis returns a client of the test Redis, a key prefix of the example's own and a
// function that removes its keys. In your code: redis.NewClient(&redis.Options{Addr: ...}) and
// the default prefix.
func exampleRedis() (client redis.UniversalClient, prefix string, done func()) {
	env, done := redistest.ForExample("example")
	return env.Client, env.Prefix, done
}
