package redistest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Counter counts the commands a client sends, alone or pipelined, that Match accepts. Add it to a
// client with AddHook.
type Counter struct {
	Match func(cmd redis.Cmder) bool
	n     atomic.Int64
}

// Count is how many matching commands went through so far.
func (c *Counter) Count() int64 { return c.n.Load() }

// DialHook leaves dialing alone.
func (*Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts a command sent alone.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts the commands of a pipeline.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *Counter) count(cmd redis.Cmder) {
	if c.Match(cmd) {
		c.n.Add(1)
	}
}

// NamesKey reports whether one of the command's arguments contains s (a key, a hash tag).
func NamesKey(cmd redis.Cmder, s string) bool {
	for _, a := range cmd.Args() {
		if v, ok := a.(string); ok && strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// KillSubscriptions closes, on the server, the Pub/Sub connections of the clients named name
// (redis.Options.ClientName, or client_name in a URL), as a network failure would, and returns
// how many it closed. go-redis then resubscribes on a new connection; what was published
// meanwhile is lost.
func KillSubscriptions(tb testing.TB, env *Env, name string) int {
	tb.Helper()
	ctx := context.Background()
	list, err := env.Client.ClientList(ctx).Result()
	if err != nil {
		tb.Fatal(err)
	}
	killed := 0
	for line := range strings.SplitSeq(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") || !strings.Contains(line, " sub=1 ") {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
		if err := env.Client.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
			tb.Fatal(err)
		}
		killed++
	}
	return killed
}
