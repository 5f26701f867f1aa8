package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// MaxDeadPage bounds DeadListParams.Limit and the limits of respawn and delete.
const MaxDeadPage = 1000

// DeadListParams page through a queue's dead letter, oldest first.
type DeadListParams struct {
	Namespace string
	Queue     string
	// Limit is the page size (1..1000). 0: 100.
	Limit int
	// Cursor is the NextCursor of the previous page; "" starts at the oldest job.
	Cursor string
}

// DeadListResult is one page of dead jobs; its Total is the size of the dead letter.
type DeadListResult = JobPage

// JobPage is one page of a list of jobs.
type JobPage struct {
	Jobs []Job
	// NextCursor fetches the next page; "" when this page is the last.
	NextCursor string
	// Total is the number of jobs listed, of which Jobs are a page.
	Total int64
}

// offsetCursor reads a cursor that is an offset ("" is 0).
func offsetCursor(cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	// No list reaches 2^40 jobs; larger offsets would reach Redis as numbers it cannot read (and
	// overflow offset + limit).
	offset, err := strconv.ParseInt(cursor, 10, 64)
	if err != nil || offset < 0 || offset > 1<<40 {
		return 0, invalid("cursor", "%q is not a cursor this API returned", cursor)
	}
	return offset, nil
}

// DeadList returns a page of the dead letter. The cursor is an offset: jobs respawned or deleted
// between pages shift the pages after them.
func (c *Client) DeadList(ctx context.Context, p DeadListParams) (DeadListResult, error) {
	if err := validateQueue(p.Namespace, p.Queue); err != nil {
		return DeadListResult{}, err
	}
	limit, err := pageLimit(p.Limit, 100)
	if err != nil {
		return DeadListResult{}, err
	}
	offset, err := offsetCursor(p.Cursor)
	if err != nil {
		return DeadListResult{}, err
	}
	page, err := c.store.DeadList(ctx, p.Namespace, p.Queue, int(offset), limit)
	if err != nil {
		return DeadListResult{}, fmt.Errorf("queue: dead list: %w", err)
	}
	res := DeadListResult{Total: page.Total, Jobs: appendJobs(nil, p.Namespace, p.Queue, page.Jobs)}
	if next := offset + int64(limit); next < res.Total {
		res.NextCursor = strconv.FormatInt(next, 10)
	}
	return res, nil
}

// DeadPeek returns the oldest dead job, or ErrNotFound when the dead letter is empty.
func (c *Client) DeadPeek(ctx context.Context, ns, q string) (*Job, error) {
	res, err := c.DeadList(ctx, DeadListParams{Namespace: ns, Queue: q, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(res.Jobs) == 0 {
		return nil, ErrNotFound
	}
	return &res.Jobs[0], nil
}

// DeadSize returns the number of jobs in the dead letter.
func (c *Client) DeadSize(ctx context.Context, ns, q string) (int64, error) {
	if err := validateQueue(ns, q); err != nil {
		return 0, err
	}
	n, err := c.store.DeadSize(ctx, ns, q)
	if err != nil {
		return 0, fmt.Errorf("queue: dead size: %w", err)
	}
	return n, nil
}

// DeadRespawnParams choose dead jobs to run again: the given IDs, or else the Limit oldest.
type DeadRespawnParams struct {
	Namespace string
	Queue     string
	IDs       []string
	Limit     int // 1..1000 when IDs is empty
	// TTL is the respawned jobs' new lifetime from now. 0: each job's own ttl again.
	TTL time.Duration
}

// DeadRespawn moves dead jobs back to ready with all their tries and a fresh ttl, and returns the
// ids moved (ids that are not dead are passed over). A job with a unique key takes it back for
// Config.DefaultUniqueFor, as a publish would, unless another pending job holds it by then: the job
// is respawned all the same, without its unique key (Job.UniqueKey becomes empty).
func (c *Client) DeadRespawn(ctx context.Context, p DeadRespawnParams) ([]string, error) {
	if err := validateQueue(p.Namespace, p.Queue); err != nil {
		return nil, err
	}
	if p.TTL < 0 {
		return nil, invalid("ttl", "must not be negative")
	}
	if p.TTL > 0 && p.TTL < time.Millisecond {
		return nil, invalid("ttl", "must be at least 1ms")
	}
	if err := checkDeadSelection(p.IDs, p.Limit); err != nil {
		return nil, err
	}
	ids, err := c.store.DeadRespawn(ctx, p.Namespace, p.Queue, p.TTL.Milliseconds(), c.cfg.DefaultUniqueFor.Milliseconds(), p.Limit, p.IDs)
	if err != nil {
		return nil, fmt.Errorf("queue: dead respawn: %w", err)
	}
	return ids, nil
}

// DeadDeleteParams choose dead jobs to remove: the given IDs, or else the Limit oldest.
type DeadDeleteParams struct {
	Namespace string
	Queue     string
	IDs       []string
	Limit     int
}

// DeadDelete removes jobs from the dead letter and returns how many.
func (c *Client) DeadDelete(ctx context.Context, p DeadDeleteParams) (int, error) {
	if err := validateQueue(p.Namespace, p.Queue); err != nil {
		return 0, err
	}
	if err := checkDeadSelection(p.IDs, p.Limit); err != nil {
		return 0, err
	}
	n, err := c.store.DeadDelete(ctx, p.Namespace, p.Queue, p.Limit, p.IDs)
	if err != nil {
		return 0, fmt.Errorf("queue: dead delete: %w", err)
	}
	return n, nil
}

// checkDeadSelection checks a choice of dead jobs: at most MaxDeadPage ids, or without ids a
// limit of 1..MaxDeadPage.
func checkDeadSelection(ids []string, limit int) error {
	if len(ids) > MaxDeadPage {
		return invalid("ids", "at most %d per call", MaxDeadPage)
	}
	if len(ids) == 0 {
		if limit < 1 || limit > MaxDeadPage {
			return invalid("limit", "%d is outside 1..%d (or name ids)", limit, MaxDeadPage)
		}
	}
	for _, id := range ids {
		if err := validateID(id); err != nil {
			return inField("ids", err)
		}
	}
	return nil
}

func pageLimit(limit, def int) (int, error) {
	if limit == 0 {
		return def, nil
	}
	if limit < 1 || limit > MaxDeadPage {
		return 0, invalid("limit", "%d is outside 1..%d", limit, MaxDeadPage)
	}
	return limit, nil
}
