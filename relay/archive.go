package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/taskarchive"
)

// Archive keeps finished tasks in MySQL or MariaDB (Config.Archive): written in batches by
// maintenance, read by Get once a task has left Redis, and deleted after its retention. Open one
// with OpenArchive; Close it after the Clients that use it.
type Archive = taskarchive.Archive

// ArchiveConfig configures OpenArchive. The zero value is usable: Table is the table the rows go
// to, created when missing (default "sluice_tasks"); Retention is how long a task is kept from
// its creation (default 72h); BatchSize bounds the rows one statement writes or deletes (default
// 500); MaxOpenConns caps the connections (default 8); Logger receives the retention passes'
// failures (default slog.Default()).
type ArchiveConfig = taskarchive.Config

// OpenArchive connects to the database named by dsn (go-sql-driver/mysql form:
// user:pass@tcp(host:3306)/db), creates the archive table when it is missing and returns the
// archive to set as Config.Archive. Times are stored in UTC whatever the DSN says.
func OpenArchive(ctx context.Context, dsn string, cfg ArchiveConfig) (*Archive, error) {
	return taskarchive.Open(ctx, dsn, cfg)
}

// archiveBatch is the most finished tasks one maintenance pass archives per endpoint.
const archiveBatch = 500

// archivePruneEvery is how often a Client enforces the archive's retention.
const archivePruneEvery = time.Minute

// archiveFinished writes a batch of an endpoint's finished tasks to the archive and forgets
// them in the backlog. The write is an idempotent upsert, so two processes archiving the same
// task, or a crash between the write and the forgetting, only write a row twice. A task whose
// final status was already read kept its finished retention until now (get.lua): once archived,
// its life is shortened to the read retention, as the read would have. A crash before that only
// leaves it in Redis for the finished retention.
func (c *Client) archiveFinished(ctx context.Context, endpoint string) (int, error) {
	a := c.cfg.Archive
	if a == nil {
		return 0, nil
	}
	k := c.keys.get(endpoint)
	ids, err := c.rdb.ZRange(ctx, k.archive(), 0, archiveBatch-1).Result()
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, k.task(id), archiveReadFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("relay: read finished tasks of %s: %w", endpoint, err)
	}
	recs := make([]taskarchive.Record, 0, len(ids))
	var read []string // archived tasks whose final status was read
	for _, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil {
			continue
		}
		if r, ok := archiveRecord(v); ok {
			recs = append(recs, r)
			if s, _ := v[len(archiveFields)].(string); s == "1" {
				read = append(read, r.ID)
			}
		}
	}
	if len(recs) > 0 {
		if err := a.Put(ctx, recs...); err != nil {
			return 0, fmt.Errorf("relay: archive tasks of %s: %w", endpoint, err)
		}
	}
	members := make([]any, len(ids))
	for i, id := range ids {
		members[i] = id
	}
	if err := c.rdb.ZRem(ctx, k.archive(), members...).Err(); err != nil {
		return len(recs), fmt.Errorf("relay: forget archived tasks of %s: %w", endpoint, err)
	}
	if len(read) > 0 {
		pipe := c.rdb.Pipeline()
		for _, id := range read {
			pipe.PExpire(ctx, k.task(id), c.cfg.ReadRetention)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return len(recs), fmt.Errorf("relay: shorten archived tasks of %s: %w", endpoint, err)
		}
	}
	return len(recs), nil
}

// pruneArchive enforces the archive's retention at most once per archivePruneEvery.
func (c *Client) pruneArchive(ctx context.Context) error {
	if c.cfg.Archive == nil {
		return nil
	}
	now := time.Now().UnixNano()
	last := c.lastPrune.Load()
	if now-last < int64(archivePruneEvery) || !c.lastPrune.CompareAndSwap(last, now) {
		return nil
	}
	if _, err := c.cfg.Archive.Prune(ctx); err != nil {
		return fmt.Errorf("relay: prune archive: %w", err)
	}
	return nil
}

var archiveFields = []string{"id", "ep", "ns", "st", "hs", "res", "rh", "err", "pri", "att", "ca", "sa", "ea"}

// archiveReadFields are archiveFields and then rd, whether the final status was read.
var archiveReadFields = append(archiveFields[:len(archiveFields):len(archiveFields)], "rd")

// archiveRecord turns the archiveFields of a finished task into a record.
func archiveRecord(v []any) (taskarchive.Record, bool) {
	s := func(i int) string { x, _ := v[i].(string); return x }
	n := func(i int) int64 { x, _ := strconv.ParseInt(s(i), 10, 64); return x }
	at := func(i int) time.Time {
		if x := n(i); x > 0 {
			return time.UnixMilli(x).UTC()
		}
		return time.Time{}
	}
	if s(0) == "" || !Status(s(3)).Final() {
		return taskarchive.Record{}, false
	}
	r := taskarchive.Record{
		ID: s(0), Endpoint: s(1), Namespace: s(2), Status: s(3), HTTPStatus: int(n(4)), Error: s(7),
		Priority: int(n(8)), Tries: int(n(9)), CreatedAt: at(10), StartedAt: at(11), EndedAt: at(12),
	}
	if res := s(5); res != "" {
		r.Result = []byte(res)
	}
	if rh := s(6); rh != "" && rh != "{}" {
		r.ResultHeaders = json.RawMessage(rh)
	}
	return r, true
}

// getArchived answers Get for a task no longer in Redis: from the archive when there is one.
func (c *Client) getArchived(ctx context.Context, id string) (Task, error) {
	if c.cfg.Archive == nil {
		return Task{}, fmt.Errorf("%w: task %q", ErrNotFound, id)
	}
	r, err := c.cfg.Archive.Get(ctx, id)
	if errors.Is(err, taskarchive.ErrNotFound) {
		return Task{}, fmt.Errorf("%w: task %q", ErrNotFound, id)
	}
	if err != nil {
		return Task{}, fmt.Errorf("relay: get task %s from the archive: %w", id, err)
	}
	t := Task{
		ID: r.ID, Endpoint: r.Endpoint, Namespace: r.Namespace, Status: Status(r.Status), HTTPStatus: r.HTTPStatus,
		Result: r.Result, Error: r.Error, Priority: r.Priority, Tries: r.Tries, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, EndedAt: r.EndedAt, WaitNum: -1, Archived: true,
	}
	if len(r.ResultHeaders) > 0 {
		_ = json.Unmarshal(r.ResultHeaders, &t.ResultHeader)
	}
	return t, nil
}
