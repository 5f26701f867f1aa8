package bench

// The peers measured side by side with Sluice. Importing them here keeps bench/go.mod stable while
// the benchmarks that use them live in subpackages.
import (
	_ "github.com/dtm-labs/rockscache"
	_ "github.com/go-redis/redis_rate/v10"
	_ "github.com/hibiken/asynq"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/sluicehq/sluice/internal/testkit/redistest"
)
