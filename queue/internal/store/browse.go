package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ListPage is a page of jobs in one state (list.lua): the jobs, the size of the structure listed
// and the offset of the next page (-1: none).
type ListPage struct {
	Jobs  []Job
	Total int64
	Next  int64
}

// List reads a page of the queue's jobs in state (list.lua's names: ready, scheduled, retrying,
// leased, dead, done) from offset, at most limit of them, with payloads and results cut to cut
// bytes.
func (s *Store) List(ctx context.Context, ns, q, state string, offset int64, limit, cut int) (ListPage, error) {
	f, err := s.run(ctx, scriptList, s.keys.get(ns, q), state, offset, limit, cut).Slice()
	if err != nil {
		return ListPage{}, err
	}
	if len(f) < 3 || len(f) != 3+int(num(f[2]))*fieldsPerJob {
		return ListPage{}, fmt.Errorf("unexpected reply of %d fields", len(f))
	}
	return ListPage{Total: num(f[0]), Next: num(f[1]), Jobs: parseJobs(f[3:], int(num(f[2])))}, nil
}

// DelayedSplit counts, among the first delayed jobs by due time (delayed_split.lua reads at most
// 256), the ones waiting for a retry: it returns the size of the delayed set, how many were
// read and how many of those are retrying.
func (s *Store) DelayedSplit(ctx context.Context, ns, q string) (delayed, scanned, retrying int64, err error) {
	f, err := s.run(ctx, scriptDelayedSplit, s.keys.get(ns, q)).Slice()
	if err != nil {
		return 0, 0, 0, err
	}
	if len(f) != 3 {
		return 0, 0, 0, fmt.Errorf("unexpected reply of %d fields", len(f))
	}
	return num(f[0]), num(f[1]), num(f[2]), nil
}

// RunNow makes delayed jobs ready now and returns the ids it moved.
func (s *Store) RunNow(ctx context.Context, ns, q string, ids []string) ([]string, error) {
	return s.run(ctx, scriptRunNow, s.keys.get(ns, q), stringArgs(nil, ids)...).StringSlice()
}

// SetPriority gives jobs a new priority and returns the ids it changed.
func (s *Store) SetPriority(ctx context.Context, ns, q string, priority int, ids []string) ([]string, error) {
	return s.run(ctx, scriptSetPriority, s.keys.get(ns, q), stringArgs([]any{priority}, ids)...).StringSlice()
}

func stringArgs(head []any, ids []string) []any {
	for _, id := range ids {
		head = append(head, id)
	}
	return head
}

// UniqueHolder returns the id of the job that holds unique key u ("" when none does). The key may
// outlive its holder by a little (publish.lua and dead_respawn.lua check the holder before they
// trust it): the caller reads the job to know.
func (s *Store) UniqueHolder(ctx context.Context, ns, q, u string) (string, error) {
	id, err := s.rdb.Get(ctx, s.keys.get(ns, q).uniqueKey(u)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return id, err
}

// CallbackTry is what callback_finish.lua records and does: Entry is the try as a JSON object
// (the script adds its outcome); Ack says the try delivered (Result is the response), else it
// failed (Error, RetryMs with -1 for the job's backoff, NoRetry).
type CallbackTry struct {
	Entry   string
	Ack     bool
	Result  []byte
	Error   string
	RetryMs int64
	NoRetry bool
	// Keep is how many tries a job keeps; KeepMs how long its list of tries lasts after the last.
	Keep   int
	KeepMs int64
	// Span, when not "" and the try failed, is kept in the record as RAttempt (the failed try's
	// span, for the next try's to link to), as Nack's attempt.
	Span string
}

// FinishCallback records one try of a callback job and its outcome in one script call, and returns
// the outcome ("delivered", "retried", "dead" or "expired"), or ErrNotFound or ErrLeaseLost.
func (s *Store) FinishCallback(ctx context.Context, ns, q, id string, delivery int, t CallbackTry) (string, error) {
	k := s.keys.get(ns, q).withTries(id)
	action, text, noRetry := "nack", []byte(t.Error), "0"
	if t.Ack {
		action, text = "ack", t.Result
	}
	if t.NoRetry {
		noRetry = "1"
	}
	args := []any{id, delivery, t.Entry, t.Keep, t.KeepMs, action, text, t.RetryMs, noRetry}
	if t.Span != "" && !t.Ack {
		args = append(args, t.Span)
	}
	out, err := s.run(ctx, scriptCallbackFinish, k, args...).Text()
	return out, scriptError(err)
}

// CallbackTries reads the tries a callback job recorded, newest first, as the JSON objects
// callback_finish.lua stored.
func (s *Store) CallbackTries(ctx context.Context, ns, q, id string) ([]string, error) {
	return s.rdb.LRange(ctx, s.keys.get(ns, q).tries(id), 0, -1).Result()
}
