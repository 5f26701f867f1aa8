package redisx

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// LoadScripts loads scripts into the script cache of every master, so EVALSHA can be used inside
// pipelines (where go-redis does not fall back to EVAL on NOSCRIPT).
func LoadScripts(ctx context.Context, client redis.UniversalClient, scripts ...*redis.Script) error {
	load := func(ctx context.Context, c redis.Cmdable) error {
		for _, s := range scripts {
			if err := s.Load(ctx, c).Err(); err != nil {
				return fmt.Errorf("load script %s: %w", s.Hash(), err)
			}
		}
		return nil
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return load(ctx, c) })
	}
	return load(ctx, client)
}

// IsNoScript reports whether err is Redis's NOSCRIPT reply (a script cache flushed or a failover to
// a replica that never saw the script).
func IsNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}
