package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// NewJob is one validated job to publish, every default applied: what a publish script writes.
type NewJob struct {
	ID                             string
	Payload                        []byte
	Priority, Tries                int64
	TTLMs, TTRMs, DelayMs, RunAtMs int64 // RunAtMs 0: due after DelayMs
	BackoffBaseMs, BackoffMaxMs    int64
	UniqueKey                      string
	UniqueForMs                    int64
	Attributes                     string // JSON, "" for none
	Callback                       string // JSON, "" for none
}

// jobArgCount is the number of publish.lua arguments per job.
const jobArgCount = 14

// appendArgs appends the job's jobArgCount arguments of publish.lua to dst.
func (f *NewJob) appendArgs(dst []any) []any {
	return append(dst,
		f.ID, f.Payload, f.Priority, f.Tries, f.TTLMs, f.TTRMs, f.DelayMs, f.RunAtMs,
		f.BackoffBaseMs, f.BackoffMaxMs, f.UniqueKey, f.UniqueForMs, f.Attributes, f.Callback,
	)
}

// dueNowPlain reports whether the job is due at once and has no ttl, unique key or callback:
// the jobs publish_ready.lua takes.
func (f *NewJob) dueNowPlain() bool {
	return f.TTLMs == 0 && f.dueNowUnkeyed()
}

// dueNowUnkeyed reports whether the job is due at once and has no unique key or callback: the
// jobs publish_batch.lua takes.
func (f *NewJob) dueNowUnkeyed() bool {
	return f.DelayMs == 0 && f.RunAtMs == 0 && f.UniqueKey == "" && f.Callback == ""
}

// Published is the outcome of one job's publish.
type Published struct {
	// ID of the new job, or of the job already holding the unique key.
	ID string
	// Duplicate reports that the unique key was held and nothing was published.
	Duplicate bool
}

// Publish publishes jobs of one queue in one script call, which is safe to send twice (every job
// is written once) and, with Config.ReplicaAcks, waits for replicas (a *NotReplicatedError when
// too few acknowledged). A lone job due now without a ttl, unique key or callback takes
// publish_ready.lua, jobs due now without a unique key or callback publish_batch.lua, any others
// publish.lua.
func (s *Store) Publish(ctx context.Context, ns, q string, jobs []*NewJob) ([]Published, error) {
	k := s.keys.get(ns, q)
	if s.publishesReady(ctx) {
		if len(jobs) == 1 && jobs[0].dueNowPlain() {
			return s.publishReady(ctx, k, jobs[0])
		}
		if allDueNowUnkeyed(jobs) {
			return s.publishBatch(ctx, k, jobs)
		}
	}
	reply, err := s.run(ctx, scriptPublish, k, publishArgs(jobs)...).Result()
	if err != nil {
		return nil, err
	}
	return parsePublishReply(reply, len(jobs))
}

// QueueJobs are jobs to publish to one queue.
type QueueJobs struct {
	Namespace, Queue string
	Jobs             []*NewJob
}

// PublishQueues publishes the jobs of several queues, one publish.lua call per queue, pipelined in
// one round trip (one per master with Config.ReplicaAcks on a cluster). The results are in the
// order of batches. A failure names the queue.
func (s *Store) PublishQueues(ctx context.Context, batches []QueueJobs) ([][]Published, error) {
	calls := make([]scriptCall, len(batches))
	for i, b := range batches {
		calls[i] = scriptCall{script: scriptPublish, keys: s.keys.get(b.Namespace, b.Queue), args: publishArgs(b.Jobs)}
	}
	queueOf := func(i int) (string, string) { return batches[i].Namespace, batches[i].Queue }
	return readEach(ctx, s, calls, queueOf, func(i int, cmd *redis.Cmd) ([]Published, error) {
		reply, err := cmd.Result()
		if err != nil {
			return nil, err
		}
		return parsePublishReply(reply, len(batches[i].Jobs))
	})
}

// publishArgs are publish.lua's own arguments for jobs: their count, then jobArgCount per job.
func publishArgs(jobs []*NewJob) []any {
	args := make([]any, 0, 1+len(jobs)*jobArgCount)
	args = append(args, len(jobs))
	for _, f := range jobs {
		args = f.appendArgs(args)
	}
	return args
}

func parsePublishReply(reply any, n int) ([]Published, error) {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 2*n {
		return nil, fmt.Errorf("unexpected publish reply %T", reply)
	}
	out := make([]Published, n)
	for i := range out {
		out[i] = Published{ID: str(vals[2*i]), Duplicate: num(vals[2*i+1]) == 1}
	}
	return out, nil
}
