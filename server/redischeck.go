package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrEvictingRedis is returned by New when Redis may evict keys: a queue on such a Redis loses
// jobs silently under memory pressure.
var ErrEvictingRedis = errors.New("server: redis maxmemory-policy evicts keys")

// checkRedis makes sure an external Redis answers and is fit for a job queue: it refuses a
// maxmemory-policy other than noeviction and warns when persistence is off. When CONFIG is
// disabled (some managed services) it warns and goes on.
func checkRedis(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("server: cannot reach redis: %w", err)
	}
	check := func(ctx context.Context, c redis.Cmdable) error {
		cfg, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
		if err != nil {
			log.Warn("could not read redis maxmemory-policy (CONFIG disabled?); make sure it is noeviction", "error", err)
			return nil
		}
		if p := cfg["maxmemory-policy"]; p != "" && p != "noeviction" {
			return fmt.Errorf("%w: maxmemory-policy is %q; Sluice needs noeviction, or jobs vanish under memory "+
				"pressure (run: redis-cli CONFIG SET maxmemory-policy noeviction, and set it in redis.conf)", ErrEvictingRedis, p)
		}
		aof, err1 := c.ConfigGet(ctx, "appendonly").Result()
		save, err2 := c.ConfigGet(ctx, "save").Result()
		if err1 == nil && err2 == nil && aof["appendonly"] == "no" && save["save"] == "" {
			log.Warn("redis persistence is off (appendonly no, no save points): every job is lost when redis restarts")
		}
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return check(ctx, c) })
	}
	return check(ctx, rdb)
}
