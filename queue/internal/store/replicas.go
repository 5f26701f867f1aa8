package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// NotReplicatedError reports a publish that fewer replicas than Config.ReplicaAcks acknowledged
// within Config.ReplicaAckTimeout (queue.ErrNotReplicated). The job is on the primary.
type NotReplicatedError struct {
	Acked, Want int
	Timeout     time.Duration
}

func (e *NotReplicatedError) Error() string {
	return fmt.Sprintf("%d of %d within %s", e.Acked, e.Want, e.Timeout)
}

// waitsForReplicas reports whether calls of the script wait for Config.ReplicaAcks: the calls
// that create jobs. Losing an ack or a lease in a failover only redelivers a job, which
// at-least-once delivery allows; losing a publish loses the job.
func (s *Store) waitsForReplicas(name scriptName) bool {
	return s.cfg.ReplicaAcks > 0 && name == scriptPublish
}

// runReplicated runs script calls like runMany, and after them, in the same pipeline and so on
// the same connection, WAIT: Redis counts the replicas that have every write of that connection,
// which a WAIT on any other connection would not see. On a cluster the calls are grouped by the
// master of their keys, one pipeline per master. A call whose group was acknowledged by fewer
// replicas than asked carries a *NotReplicatedError (unless it failed on its own).
func (s *Store) runReplicated(ctx context.Context, calls []scriptCall) ([]*redis.Cmd, error) {
	if err := s.scripts.Load(ctx); err != nil {
		return nil, err
	}
	groups, err := s.byMaster(ctx, calls)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.Cmd, len(calls))
	var missing []int
	for _, g := range groups {
		pipe := g.client.Pipeline()
		own := make([]*redis.Cmd, 0, len(g.calls))
		for _, i := range g.calls {
			cmds[i] = s.queueCall(ctx, pipe, calls[i])
			own = append(own, cmds[i])
		}
		wait := pipe.Do(ctx, "wait", s.cfg.ReplicaAcks, s.cfg.ReplicaAckTimeout.Milliseconds())
		_, err := pipe.Exec(ctx)
		if err != nil && !errors.Is(err, redis.Nil) && !allReplied(own) {
			return nil, err
		}
		acked, err := wait.Int64()
		if err != nil {
			return nil, fmt.Errorf("wait for replicas: %w", err)
		}
		for _, i := range g.calls {
			switch {
			case redisx.IsMissingScript(cmds[i].Err()):
				missing = append(missing, i)
			case cmds[i].Err() == nil && acked < int64(s.cfg.ReplicaAcks):
				cmds[i].SetErr(&NotReplicatedError{Acked: int(acked), Want: s.cfg.ReplicaAcks, Timeout: s.cfg.ReplicaAckTimeout})
			}
		}
	}
	if len(missing) > 0 {
		// Redis lost the scripts (restart, failover, flush): those calls did not run. Load the
		// scripts and run them once more.
		if err := s.scripts.Reload(ctx); err != nil {
			return nil, err
		}
		again := make([]scriptCall, len(missing))
		for j, i := range missing {
			again[j] = calls[i]
		}
		redone, err := s.runReplicated(ctx, again)
		if err != nil {
			return nil, err
		}
		for j, i := range missing {
			cmds[i] = redone[j]
		}
	}
	return cmds, nil
}

// masterCalls are the calls (indexes) that run on one master.
type masterCalls struct {
	client redis.Cmdable
	calls  []int
}

// byMaster groups calls by the master that holds their keys: one group on anything but a cluster.
func (s *Store) byMaster(ctx context.Context, calls []scriptCall) ([]*masterCalls, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		g := &masterCalls{client: s.rdb}
		for i := range calls {
			g.calls = append(g.calls, i)
		}
		return []*masterCalls{g}, nil
	}
	var groups []*masterCalls
	byNode := map[*redis.Client]*masterCalls{}
	for i, call := range calls {
		node, err := cc.MasterForKey(ctx, call.keys.all[0])
		if err != nil {
			return nil, fmt.Errorf("master of %s: %w", call.keys.all[0], err)
		}
		g := byNode[node]
		if g == nil {
			g = &masterCalls{client: node}
			byNode[node] = g
			groups = append(groups, g)
		}
		g.calls = append(g.calls, i)
	}
	return groups, nil
}
