package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
)

// QuotaFunc returns the most of a thing (queues, schedules) namespace ns may have (0: no limit):
// Config.QueueQuota and Config.ScheduleQuota.
type QuotaFunc func(ctx context.Context, ns string) (int64, error)

// QueuesPageParams ask for one page of a namespace's queues.
type QueuesPageParams struct {
	Namespace string
	// After is the Next of the previous page; "": the first page.
	After string
	// Limit is about how many queues the page holds (Redis SSCAN's COUNT: a page may hold a few
	// more, and a small namespace comes whole in one page). 0: 100.
	Limit int
}

// QueuesPageResult is one page of a namespace's queues.
type QueuesPageResult struct {
	// Queues are the page's queue names, sorted within the page (pages are not in name order).
	Queues []string
	// Next continues the listing after this page; "": this page is the last.
	Next string
}

// QueuesPage lists a namespace's queues a page at a time, so a namespace with 100,000 queues is
// listed without reading them all in one call. A queue registered throughout the listing is in
// at least one page (possibly two, while the registry grows).
func (c *Client) QueuesPage(ctx context.Context, p QueuesPageParams) (QueuesPageResult, error) {
	if !validName(p.Namespace) {
		return QueuesPageResult{}, invalid("namespace", "%q %s", p.Namespace, nameRule)
	}
	return scanPage(p.After, p.Limit, func(cursor uint64, count int64) ([]string, uint64, error) {
		return c.store.QueuesPage(ctx, p.Namespace, cursor, count)
	})
}

// NamespacesPage lists the namespaces that have queues a page at a time, as QueuesPage lists a
// namespace's queues (p.Namespace is not used).
func (c *Client) NamespacesPage(ctx context.Context, p QueuesPageParams) (QueuesPageResult, error) {
	return scanPage(p.After, p.Limit, func(cursor uint64, count int64) ([]string, uint64, error) {
		return c.store.NamespacesPage(ctx, cursor, count)
	})
}

// scanPage reads one page of a registry set with scan (SSCAN) from the position after.
func scanPage(after string, limit int, scan func(cursor uint64, count int64) ([]string, uint64, error)) (QueuesPageResult, error) {
	var cursor uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil || n == 0 {
			return QueuesPageResult{}, invalid("cursor", "not a position in this listing")
		}
		cursor = n
	}
	if limit <= 0 {
		limit = 100
	}
	// SSCAN may answer an empty page that is not the last (a sparse set after deletions): read
	// on, a bounded number of times, so a page is empty only when the listing ends or rarely.
	var names []string
	next := cursor
	for range 8 {
		var err error
		names, next, err = scan(next, int64(limit))
		if err != nil {
			return QueuesPageResult{}, fmt.Errorf("queue: list: %w", err)
		}
		if len(names) > 0 || next == 0 {
			break
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	res := QueuesPageResult{Queues: names}
	if next != 0 {
		res.Next = strconv.FormatUint(next, 10)
	}
	return res, nil
}

// QueueCount returns how many queues a namespace has (one SCARD).
func (c *Client) QueueCount(ctx context.Context, ns string) (int64, error) {
	if !validName(ns) {
		return 0, invalid("namespace", "%q %s", ns, nameRule)
	}
	n, err := c.store.QueueCount(ctx, ns)
	if err != nil {
		return 0, fmt.Errorf("queue: queue count: %w", err)
	}
	return n, nil
}
