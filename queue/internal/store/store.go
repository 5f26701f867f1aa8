// Package store is where the job queue meets Redis: the keys of every queue, the job record's
// encodings (cmsgpack, and a plain codec for stores without it) and the Lua scripts with the code
// that runs them (a function library where Redis has FUNCTION, EVALSHA elsewhere, WAIT for
// replicas after a publish when asked).
//
// Package queue calls the typed methods of a Store for every read and state change and never
// chooses a script, a codec or a key itself. The choices made here are speed choices that leave the
// stored data alike: a lone job due now is published by publish_ready.lua with a record the client
// encoded (stamped with the store's reading of Redis's clock when it has a fresh one, clock.go), a
// batch of them by publish_batch.lua, any other publish by publish.lua; acks without a result take
// ack_noresult.lua, others ack.lua. Whichever script wrote a job, its record is the same bytes.
package store

import (
	"cmp"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/duework"
	"github.com/sluicehq/sluice/internal/redisx"
)

// Config is what a Store needs of the queue client's configuration, defaults filled in.
type Config struct {
	// Prefix starts every key.
	Prefix string
	// Batch is the most jobs one housekeeping step moves in one script call.
	Batch int
	// DeadRetention and MaxDead bound each queue's dead letter; ResultRetention and MaxResults its
	// kept results.
	DeadRetention   time.Duration
	MaxDead         int
	ResultRetention time.Duration
	MaxResults      int
	// ReplicaAcks is how many replicas must acknowledge a publish (0: none are waited for), within
	// ReplicaAckTimeout.
	ReplicaAcks       int
	ReplicaAckTimeout time.Duration
	// MaxConsumeBytes bounds the records one Consume answer carries (ConsumeAcking).
	MaxConsumeBytes int64
	// Logger receives script loading warnings and unreadable records.
	Logger *slog.Logger
}

// Store reads and changes queues on one Redis (standalone, Sentinel or Cluster). It is safe for
// concurrent use.
type Store struct {
	rdb     redis.UniversalClient
	cfg     Config
	scripts *redisx.ScriptRunner // runs the scripts on rdb (runner.go)
	// scheduleScripts runs the schedule scripts that need no queue helpers (schedule.go).
	scheduleScripts *redisx.ScriptRunner
	keys            *keyCache
	// clocks are the readings of the Redis servers' clocks that lone publishes stamp jobs with
	// (clock.go).
	clocks *redisClocks
	// common are the ARGV every script gets after the queue's channel (lib.lua), made once.
	common []any

	registeredMu sync.Mutex
	registered   map[QueueName]time.Time // when this process last registered a queue
	// registeredCallbacks is when this process last added a queue to the callback registry.
	registeredCallbacks map[QueueName]time.Time
}

// New returns a Store on rdb.
func New(rdb redis.UniversalClient, cfg Config) *Store {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.MaxConsumeBytes = cmp.Or(cfg.MaxConsumeBytes, 4<<20)
	return &Store{
		rdb:                 rdb,
		cfg:                 cfg,
		scripts:             redisx.NewScriptRunner(library, rdb, cfg.Logger, "queue"),
		scheduleScripts:     redisx.NewScriptRunner(scheduleLibrary, rdb, cfg.Logger, "queue schedules"),
		keys:                newKeyCache(cfg.Prefix, duework.IsCluster(rdb)),
		clocks:              newRedisClocks(rdb, time.Now),
		registered:          make(map[QueueName]time.Time),
		registeredCallbacks: make(map[QueueName]time.Time),
		common: []any{cfg.Batch, cfg.DeadRetention.Milliseconds(), cfg.MaxDead,
			cfg.ResultRetention.Milliseconds(), cfg.MaxResults},
	}
}
