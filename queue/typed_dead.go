package queue

import (
	"context"
	"fmt"
)

// DeadJob is a job of a Queue's dead letter with its payload decoded.
type DeadJob[T any] struct {
	Job
	// Value is the decoded payload; nil when it could not be decoded (DecodeErr says why), which is
	// itself a reason a job goes to the dead letter.
	Value     *T
	DecodeErr error
}

// DeadPage is one page of a Queue's dead letter, oldest job first.
type DeadPage[T any] struct {
	Jobs []DeadJob[T]
	// NextCursor fetches the next page; "" when this page is the last.
	NextCursor string
	// Total is the size of the dead letter.
	Total int64
}

// DeadList returns up to limit (1..1000; 0: 100) dead jobs from cursor ("" for the oldest), with
// their payloads decoded. Each job's LastError says why it died.
func (q *Queue[T]) DeadList(ctx context.Context, limit int, cursor string) (DeadPage[T], error) {
	res, err := q.client.DeadList(ctx, DeadListParams{Namespace: q.ns, Queue: q.name, Limit: limit, Cursor: cursor})
	if err != nil {
		return DeadPage[T]{}, err
	}
	page := DeadPage[T]{NextCursor: res.NextCursor, Total: res.Total, Jobs: make([]DeadJob[T], len(res.Jobs))}
	for i, j := range res.Jobs {
		page.Jobs[i].Job = j
		page.Jobs[i].Value, page.Jobs[i].DecodeErr = q.decode(j.Payload)
	}
	return page, nil
}

// DeadSize returns the number of jobs in the dead letter.
func (q *Queue[T]) DeadSize(ctx context.Context) (int64, error) {
	return q.client.DeadSize(ctx, q.ns, q.name)
}

// DeadRespawn moves the named dead jobs back to ready with all their tries, and returns the ids
// moved (ids that are not dead are passed over). It is one round trip per 1,000 ids.
func (q *Queue[T]) DeadRespawn(ctx context.Context, ids ...string) ([]string, error) {
	var out []string
	for start := 0; start < len(ids); start += MaxDeadPage {
		got, err := q.client.DeadRespawn(ctx, DeadRespawnParams{
			Namespace: q.ns, Queue: q.name, IDs: ids[start:min(start+MaxDeadPage, len(ids))],
		})
		out = append(out, got...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// DeadRespawnAll moves every job of the dead letter back to ready, oldest first, and returns how
// many it moved. Jobs that die again while it runs are not moved a second time.
func (q *Queue[T]) DeadRespawnAll(ctx context.Context) (int, error) {
	size, err := q.DeadSize(ctx)
	if err != nil {
		return 0, err
	}
	moved := 0
	for int64(moved) < size {
		batch := int(min(size-int64(moved), MaxDeadPage))
		got, err := q.client.DeadRespawn(ctx, DeadRespawnParams{Namespace: q.ns, Queue: q.name, Limit: batch})
		moved += len(got)
		if err != nil {
			return moved, fmt.Errorf("queue: respawn all: %w", err)
		}
		if len(got) == 0 {
			break
		}
	}
	return moved, nil
}

// DeadDelete removes the named jobs from the dead letter and returns how many it removed.
func (q *Queue[T]) DeadDelete(ctx context.Context, ids ...string) (int, error) {
	n := 0
	for start := 0; start < len(ids); start += MaxDeadPage {
		got, err := q.client.DeadDelete(ctx, DeadDeleteParams{
			Namespace: q.ns, Queue: q.name, IDs: ids[start:min(start+MaxDeadPage, len(ids))],
		})
		n += got
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// DeadPurge empties the dead letter and returns how many jobs it removed.
func (q *Queue[T]) DeadPurge(ctx context.Context) (int, error) {
	n := 0
	for {
		got, err := q.client.DeadDelete(ctx, DeadDeleteParams{Namespace: q.ns, Queue: q.name, Limit: MaxDeadPage})
		n += got
		if err != nil || got < MaxDeadPage {
			return n, err
		}
	}
}
