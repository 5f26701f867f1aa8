package queue

import (
	"context"
	"fmt"
	"strconv"
)

// ListState is a state ListJobs lists: the job states, with delayed jobs split in two.
type ListState string

// The states ListJobs lists.
const (
	ListReady     ListState = "ready"     // in the order consumers get them, then the callback lane
	ListScheduled ListState = "scheduled" // delayed, never delivered yet, by due time
	ListRetrying  ListState = "retrying"  // delayed after a failed delivery (backoff), by due time
	ListLeased    ListState = "leased"    // by lease end
	ListDead      ListState = "dead"      // oldest first
	ListDone      ListState = "done"      // acked with a result, newest first
)

// ListStates are the states of ListJobs, in the order a job usually passes through them.
var ListStates = []ListState{ListScheduled, ListReady, ListLeased, ListRetrying, ListDead, ListDone}

// MaxListPage bounds ListJobsParams.Limit.
const MaxListPage = 100

// ListPreviewBytes is how much of each payload and result ListJobs returns: enough for a line of a
// list; Get reads a whole job.
const ListPreviewBytes = 256

// ListJobsParams choose a page of a queue's jobs in one state.
type ListJobsParams struct {
	Namespace string
	Queue     string
	State     ListState
	// Limit is the page size (1..MaxListPage). 0: 20.
	Limit int
	// Cursor is the NextCursor of the previous page; "" starts at the first job.
	Cursor string
}

// ListJobsResult is one page of jobs in one state. Their Payload and Result are cut to
// ListPreviewBytes. Total is the number of jobs in the state, except for scheduled and retrying,
// which share the delayed jobs: there it is their number together (Stats.Delayed; SplitDelayed
// counts each).
type ListJobsResult = JobPage

// ListJobs returns a page of the queue's jobs in one state, in one read-only script call. Jobs past
// their ttl that wait for housekeeping are left out, as Get leaves them out. The cursor is an
// offset: jobs that change state between pages shift the pages after them. Scheduled and retrying
// jobs are told apart by reading at most 256 delayed jobs per call, so their pages may hold fewer
// than Limit jobs (even none) and still have a NextCursor.
func (c *Client) ListJobs(ctx context.Context, p ListJobsParams) (ListJobsResult, error) {
	if err := validateQueue(p.Namespace, p.Queue); err != nil {
		return ListJobsResult{}, err
	}
	if !validListState(p.State) {
		return ListJobsResult{}, invalid("state", "%q is not one of scheduled, ready, leased, retrying, dead, done", p.State)
	}
	limit := p.Limit
	if limit == 0 {
		limit = 20
	}
	if limit < 1 || limit > MaxListPage {
		return ListJobsResult{}, invalid("limit", "%d is outside 1..%d", limit, MaxListPage)
	}
	offset, err := offsetCursor(p.Cursor)
	if err != nil {
		return ListJobsResult{}, err
	}
	page, err := c.store.List(ctx, p.Namespace, p.Queue, string(p.State), offset, limit, ListPreviewBytes)
	if err != nil {
		return ListJobsResult{}, fmt.Errorf("queue: list jobs: %w", err)
	}
	res := ListJobsResult{Total: page.Total, Jobs: appendJobs(make([]Job, 0, len(page.Jobs)), p.Namespace, p.Queue, page.Jobs)}
	if page.Next >= 0 {
		res.NextCursor = strconv.FormatInt(page.Next, 10)
	}
	return res, nil
}

func validListState(s ListState) bool {
	for _, v := range ListStates {
		if s == v {
			return true
		}
	}
	return false
}

// DelayedSplit tells the delayed jobs waiting for a retry from the ones never delivered.
type DelayedSplit struct {
	Scheduled, Retrying int64
	// Exact is false when the queue holds more delayed jobs than were read (256, the earliest
	// due): the counts are then those of the earliest.
	Exact bool
}

// SplitDelayed counts the queue's scheduled and retrying jobs (ListScheduled, ListRetrying) among
// its first 256 delayed jobs by due time, in one read-only script call that reads only the first
// fields of each record.
func (c *Client) SplitDelayed(ctx context.Context, ns, q string) (DelayedSplit, error) {
	if err := validateQueue(ns, q); err != nil {
		return DelayedSplit{}, err
	}
	delayed, scanned, retrying, err := c.store.DelayedSplit(ctx, ns, q)
	if err != nil {
		return DelayedSplit{}, fmt.Errorf("queue: split delayed: %w", err)
	}
	return DelayedSplit{Scheduled: scanned - retrying, Retrying: retrying, Exact: scanned == delayed}, nil
}

// MaxSelection bounds the ids of one RunNow, SetPriority or Delete call from a dashboard.
const MaxSelection = MaxDeadPage

func validateSelection(ns, q string, ids []string) error {
	if err := validateQueue(ns, q); err != nil {
		return err
	}
	if len(ids) > MaxSelection {
		return invalid("ids", "%d ids; at most %d at once", len(ids), MaxSelection)
	}
	for _, id := range ids {
		if err := validateID(id); err != nil {
			return err
		}
	}
	return nil
}

// RunNow makes delayed jobs (scheduled, or waiting for a retry's backoff) ready now, at the tail
// of their priority's ready jobs, and returns the ids it moved: jobs in other states, and delayed
// jobs past their ttl, are passed over. Their tries are unchanged.
func (c *Client) RunNow(ctx context.Context, ns, q string, ids ...string) ([]string, error) {
	if err := validateSelection(ns, q, ids); err != nil || len(ids) == 0 {
		return nil, err
	}
	moved, err := c.store.RunNow(ctx, ns, q, ids)
	if err != nil {
		return nil, fmt.Errorf("queue: run now: %w", err)
	}
	return moved, nil
}

// SetPriority gives jobs a new priority (0..MaxPriority) and returns the ids it changed. A ready
// job moves to the tail of its new priority's ready jobs; a delayed, leased or dead job takes the
// priority the next time it becomes ready; a ready callback job keeps its place (the callback
// lane is first in, first out).
func (c *Client) SetPriority(ctx context.Context, ns, q string, priority int, ids ...string) ([]string, error) {
	if err := validateSelection(ns, q, ids); err != nil || len(ids) == 0 {
		return nil, err
	}
	if priority < 0 || priority > MaxPriority {
		return nil, invalid("priority", "%d is outside 0..%d", priority, MaxPriority)
	}
	changed, err := c.store.SetPriority(ctx, ns, q, priority, ids)
	if err != nil {
		return nil, fmt.Errorf("queue: set priority: %w", err)
	}
	return changed, nil
}

// GetByUniqueKey returns the pending job (delayed, ready or leased) that holds a unique key, or
// ErrNotFound when none does: a job gives its key back when it is acked, goes dead or is deleted.
func (c *Client) GetByUniqueKey(ctx context.Context, ns, q, key string) (*Job, error) {
	if err := validateQueue(ns, q); err != nil {
		return nil, err
	}
	if key == "" || len(key) > MaxUniqueKey {
		return nil, invalid("unique_key", "must be 1..%d bytes", MaxUniqueKey)
	}
	id, err := c.store.UniqueHolder(ctx, ns, q, key)
	if err != nil {
		return nil, fmt.Errorf("queue: unique key: %w", err)
	}
	if id == "" {
		return nil, ErrNotFound
	}
	j, err := c.Get(ctx, ns, q, id)
	if err != nil {
		return nil, err
	}
	if j.UniqueKey != key || j.State == StateDead || j.State == StateDone {
		return nil, ErrNotFound // the key outlived its holder
	}
	return j, nil
}
