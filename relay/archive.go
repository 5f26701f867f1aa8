package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Archive keeps finished tasks after Redis has let them go (Config.Archive): written in batches
// by maintenance, read by Get once a task has left Redis, and pruned after its own retention.
// Package relay/mysqlarchive implements it on MySQL or MariaDB; relay itself links no database
// driver. An implementation must be safe for concurrent use.
type Archive interface {
	// Put writes finished tasks, replacing any record with the same ID: two processes may
	// archive the same task, and a crash between the write and forgetting the task writes it
	// again.
	Put(ctx context.Context, recs ...ArchiveRecord) error
	// Get returns the record of task id, or an error matching ErrNotFound when the archive does
	// not hold it.
	Get(ctx context.Context, id string) (ArchiveRecord, error)
	// Prune deletes the records past the archive's retention and returns how many it deleted.
	// Maintenance calls it at most once a minute per Client.
	Prune(ctx context.Context) (int64, error)
}

// ArchiveRecord is one finished task as an Archive keeps it.
type ArchiveRecord struct {
	// ID is the task id, the record's key.
	ID string
	// Endpoint is the name of the endpoint the task called.
	Endpoint string
	// Namespace is the namespace that submitted the task.
	Namespace string
	// Status is the task's final status (a Status that is Final).
	Status string
	// HTTPStatus is the status of the last response; 0 when none arrived.
	HTTPStatus int
	// Result is the response body (as capped by the dispatcher); nil when there was none.
	Result []byte
	// ResultHeaders are the kept response headers as a JSON object of header name -> values;
	// empty means none.
	ResultHeaders json.RawMessage
	// Error says why the task failed.
	Error string
	// Priority is the priority the task ran with.
	Priority int
	// Tries is the number of calls made.
	Tries int
	// CreatedAt is when the task was submitted (retention counts from it); StartedAt when its
	// first call started and EndedAt when it finished (zero when unknown). All in UTC.
	CreatedAt, StartedAt, EndedAt time.Time
}

// archiveBatch is the most finished tasks one maintenance pass archives per endpoint.
const archiveBatch = 500

// archivePruneEvery is how often a Client enforces the archive's retention.
const archivePruneEvery = time.Minute

// archiveFinished writes a batch of an endpoint's finished tasks to the archive and forgets
// them in the backlog. The write is an idempotent upsert, so two processes archiving the same
// task, or a crash between the write and the forgetting, only write a row twice. A task whose
// final status was already read kept its finished retention until now (get.lua): once archived
// (and its completion callback handed on), its life is shortened to the read retention, as the
// read would have, in the script that forgets it (handed_off.lua).
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
		cmds[i] = pipe.HMGet(ctx, k.task(id), archiveFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("relay: read finished tasks of %s: %w", endpoint, err)
	}
	recs := make([]ArchiveRecord, 0, len(ids))
	for _, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil {
			continue
		}
		if r, ok := archiveRecord(v); ok {
			recs = append(recs, r)
		}
	}
	if len(recs) > 0 {
		if err := a.Put(ctx, recs...); err != nil {
			return 0, fmt.Errorf("relay: archive tasks of %s: %w", endpoint, err)
		}
	}
	args := make([]any, 0, 1+len(ids))
	args = append(args, "archive")
	for _, id := range ids {
		args = append(args, id)
	}
	if err := c.run(ctx, scriptHandedOff, endpoint, args...).Err(); err != nil {
		return len(recs), fmt.Errorf("relay: forget archived tasks of %s: %w", endpoint, err)
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

// archiveRecord turns the archiveFields of a finished task into a record.
func archiveRecord(v []any) (ArchiveRecord, bool) {
	s := func(i int) string { x, _ := v[i].(string); return x }
	n := func(i int) int64 { x, _ := strconv.ParseInt(s(i), 10, 64); return x }
	at := func(i int) time.Time {
		if x := n(i); x > 0 {
			return time.UnixMilli(x).UTC()
		}
		return time.Time{}
	}
	if s(0) == "" || !Status(s(3)).Final() {
		return ArchiveRecord{}, false
	}
	r := ArchiveRecord{
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
	if errors.Is(err, ErrNotFound) {
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
