package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
)

// commonArgs are the leading ARGV of every script (lib.lua).
func (s *Store) commonArgs(k queueKeys, extra int) []any {
	args := make([]any, 0, 1+len(s.common)+extra)
	args = append(args, k.channel)
	return append(args, s.common...)
}

// run runs a script on one queue's keys with the common ARGV followed by args.
func (s *Store) run(ctx context.Context, name scriptName, k queueKeys, args ...any) *redis.Cmd {
	if s.waitsForReplicas(name) {
		cmds, err := s.runReplicated(ctx, []scriptCall{{script: name, keys: k, args: args}})
		if err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		return cmds[0]
	}
	call := scriptCall{script: name, keys: k, args: args}
	if !s.scripts.UsesFunctions(ctx) {
		return s.scripts.Run(ctx, string(name), s.evalKeys(call), append(s.commonArgs(k, len(args)), args...)...)
	}
	return s.scripts.Process(ctx, func() *redis.Cmd { return s.fcall(ctx, call) })
}

// fcall makes the FCALL command of a script call: FCALL fn numkeys keys... channel common... args...
// in one slice, from the queue's and the store's arguments boxed once (queueKeys.head,
// Store.common), which is what go-redis's FCall would otherwise rebuild and convert per call.
func (s *Store) fcall(ctx context.Context, call scriptCall) *redis.Cmd {
	argv := make([]any, 0, 3+len(call.keys.head)+len(s.common)+len(call.args))
	argv = append(argv, "fcall", s.scripts.Function(string(call.script)))
	argv = appendHead(argv, call.script, call.keys, call.keys.head)
	argv = append(argv, s.common...)
	argv = append(argv, call.args...)
	cmd := redis.NewCmd(ctx, argv...)
	cmd.SetFirstKeyPos(3) // the first key routes the call on a cluster
	return cmd
}

// appendHead appends to an FCALL command the head of a call of script on the queue's keys k: head
// itself (the number of keys, the keys, maybe more), or for a Once script the same with a new call
// key before the keys. Each command built is one call: go-redis sends that same command again
// when it retries, so a repeat carries the same call id.
func appendHead(argv []any, script scriptName, k queueKeys, head []any) []any {
	if !onceScripts[script] {
		return append(argv, head...)
	}
	argv = append(argv, head[0].(int)+1, k.call())
	return append(argv, head[1:]...)
}

// evalKeys are the keys of an EVALSHA call: the queue's, after a call key for a Once script.
func (s *Store) evalKeys(call scriptCall) []string {
	if !onceScripts[call.script] {
		return call.keys.all
	}
	return redisx.OnceKeys(call.keys.call(), call.keys.all)
}

// scriptCall is one script call of a pipelined batch (runMany): the script, the keys of the queue
// it runs on and its own arguments (after the common ARGV).
type scriptCall struct {
	script scriptName
	keys   queueKeys
	args   []any
}

// runMany runs script calls in one pipelined round trip and returns their commands in order, each
// with its own reply or error reply. When Redis lost its scripts or library (restart, failover,
// SCRIPT or FUNCTION FLUSH) it reloads them and runs once more the calls that could not run. Every
// script either ran whole or not at all, and a missing script did not run; the others did (on a
// cluster one node can lose its cache alone), so they must not run twice.
func (s *Store) runMany(ctx context.Context, calls []scriptCall) ([]*redis.Cmd, error) {
	if len(calls) > 0 && s.waitsForReplicas(calls[0].script) {
		return s.runReplicated(ctx, calls)
	}
	if err := s.scripts.Load(ctx); err != nil {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, call := range calls {
		cmds[i] = s.queueCall(ctx, pipe, call)
	}
	_, err := pipe.Exec(ctx)
	if anyMissingScript(cmds) {
		if err := s.scripts.Reload(ctx); err != nil {
			return nil, err
		}
		again := s.rdb.Pipeline()
		for i, cmd := range cmds {
			if redisx.IsMissingScript(cmd.Err()) {
				cmds[i] = s.queueCall(ctx, again, calls[i])
			}
		}
		_, err = again.Exec(ctx)
	}
	if err != nil && !errors.Is(err, redis.Nil) && !allReplied(cmds) {
		return nil, err
	}
	return cmds, nil
}

// readEach runs calls, one per queue, in one pipelined round trip (runMany) and reads each reply
// with read. A call that failed fails them all, its error naming the queue (queueOf).
func readEach[T any](ctx context.Context, s *Store, calls []scriptCall, queueOf func(i int) (ns, q string),
	read func(i int, cmd *redis.Cmd) (T, error)) ([]T, error) {
	cmds, err := s.runMany(ctx, calls)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(cmds))
	for i, cmd := range cmds {
		if out[i], err = read(i, cmd); err != nil {
			ns, q := queueOf(i)
			return nil, fmt.Errorf("%s/%s: %w", ns, q, err)
		}
	}
	return out, nil
}

// queueCall queues a script call on a pipeline; the scripts must be loaded (ScriptRunner.Load):
// go-redis does not fall back to EVAL on NOSCRIPT inside a pipeline.
func (s *Store) queueCall(ctx context.Context, pipe redis.Pipeliner, call scriptCall) *redis.Cmd {
	if s.scripts.UsesFunctions(ctx) {
		cmd := s.fcall(ctx, call)
		_ = pipe.Process(ctx, cmd)
		return cmd
	}
	argv := append(s.commonArgs(call.keys, len(call.args)), call.args...)
	return s.scripts.Queue(ctx, pipe, string(call.script), s.evalKeys(call), argv...)
}

func anyMissingScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if redisx.IsMissingScript(c.Err()) {
			return true
		}
	}
	return false
}

// allReplied reports whether every command got a reply (possibly an error reply of its own), as
// opposed to a connection failure that left some without one.
func allReplied(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			var re redis.Error
			if !errors.As(err, &re) {
				return false
			}
		}
	}
	return true
}
