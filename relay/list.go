package relay

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TaskList names one of an endpoint's lists of unfinished tasks, for ListTasks.
type TaskList string

const (
	// ListPending are the tasks waiting for their turn, in the order they start (the first has
	// no task ahead).
	ListPending TaskList = "pending"
	// ListRetrying are the tasks waiting out a retry backoff, the soonest due first.
	ListRetrying TaskList = "retrying"
	// ListRunning are the calls in flight and the permits out, and the slots held by callers that
	// call the endpoint themselves (AcquireSlot), the soonest to end first.
	ListRunning TaskList = "running"
)

// TaskLists are the lists ListTasks reads, in the order a task goes through them.
var TaskLists = []TaskList{ListPending, ListRetrying, ListRunning}

// MaxListTasks is the most tasks one ListTasks call returns: the read is bounded whatever the
// size of the list.
const MaxListTasks = 100

// ListTasksParams name a page of one list.
type ListTasksParams struct {
	Endpoint string
	List     TaskList
	// Offset is how many entries of the list to skip: the previous page's Next. Default 0.
	Offset int
	// Limit is the most entries to return. Default 20, at most MaxListTasks.
	Limit int
}

// ListedTask is one entry of a list.
type ListedTask struct {
	// Task is the task as Get reads it, without its result body and headers (and without an
	// estimate of its wait). Empty for a Slot.
	Task
	// Position is the entry's place in its list, 0 for the first: for a pending task, the tasks
	// that start before it.
	Position int64
	// Until is when a retrying task is due again, or when a running call's lease, a permit or a
	// slot ends.
	Until time.Time
	// Slot, in the running list, is the holder of a slot taken by a caller that makes the call
	// itself (AcquireSlot); Task is empty then.
	Slot string
}

// TaskPage is a page of a list.
type TaskPage struct {
	Tasks []ListedTask
	// Total is the size of the list when it was read.
	Total int64
	// Next is the Offset of the next page, 0 when this page is the last.
	Next int
}

// ListTasks reads a page of one of an endpoint's lists of unfinished tasks (one read-only
// script; its work and answer are bounded by Limit). Tasks move on while pages are read, so a
// task may show on two pages or on none. ErrNotFound when there is no such endpoint.
func (c *Client) ListTasks(ctx context.Context, p ListTasksParams) (TaskPage, error) {
	switch {
	case p.List != ListPending && p.List != ListRetrying && p.List != ListRunning:
		return TaskPage{}, fieldErr("list", "%q is not one of pending, retrying, running", p.List)
	case p.Offset < 0:
		return TaskPage{}, fieldErr("offset", "must not be negative")
	case p.Limit < 0 || p.Limit > MaxListTasks:
		return TaskPage{}, fieldErr("limit", "must be 1 to %d (0 for the default, 20)", MaxListTasks)
	}
	if _, err := c.Endpoint(ctx, p.Endpoint); err != nil {
		return TaskPage{}, err
	}
	limit := cmp.Or(p.Limit, 20)
	raw, err := c.run(ctx, scriptList, p.Endpoint, string(p.List), p.Offset, limit).Slice()
	if err != nil {
		return TaskPage{}, fmt.Errorf("relay: list %s tasks of %s: %w", p.List, p.Endpoint, err)
	}
	page := TaskPage{Total: raw[0].(int64)}
	for i, e := range raw[1].([]any) {
		entry := e.([]any)
		member, _ := entry[0].(string)
		lt := ListedTask{Position: int64(p.Offset + i)}
		if p.List != ListPending {
			score, _ := strconv.ParseFloat(fmt.Sprint(entry[1]), 64)
			lt.Until = time.UnixMilli(int64(score)).UTC()
		}
		switch f, ok := entry[2].([]any); {
		case ok:
			lt.Task = parseTask(f)
			lt.WaitNum = -1
			if p.List == ListPending {
				lt.WaitNum = lt.Position
			}
		case strings.HasPrefix(member, slotPrefix):
			lt.Slot = strings.TrimPrefix(member, slotPrefix)
		default:
			continue // ended between the range and the read: not in the list any more
		}
		page.Tasks = append(page.Tasks, lt)
	}
	if next := p.Offset + limit; int64(next) < page.Total {
		page.Next = next
	}
	return page, nil
}

// CancelTasks cancels tasks of one endpoint, as Cancel does each: at most MaxListTasks at once.
// An id of another endpoint's task is refused (ErrNotFound) before any is cancelled, so a caller
// that checked its right to the endpoint cannot reach another's tasks.
func (c *Client) CancelTasks(ctx context.Context, endpoint string, ids []string) ([]CancelResult, error) {
	if len(ids) > MaxListTasks {
		return nil, fieldErr("ids", "at most %d tasks at once", MaxListTasks)
	}
	for _, id := range ids {
		if ep, ok := splitID(id); !ok || ep != endpoint {
			return nil, fmt.Errorf("%w: task %q of endpoint %s", ErrNotFound, id, endpoint)
		}
	}
	out := make([]CancelResult, 0, len(ids))
	for _, id := range ids {
		res, err := c.Cancel(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}
