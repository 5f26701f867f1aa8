package redisx

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ScriptCall is one call of a library script: the script's name, its keys and its arguments.
type ScriptCall struct {
	Name string
	Keys []string
	Args []any
}

// RunMany runs calls in one pipelined round trip (a single call runs as Run does) and returns
// their commands in order, each with its own reply or error. A call that found its script
// missing on a node (a restart, failover or flush there) did not run: the scripts are loaded
// again and those calls are sent once more, so no call runs twice. The error is non-nil only when
// the scripts could not be loaded before the first send; every other failure is in its command.
func (r *ScriptRunner) RunMany(ctx context.Context, calls []ScriptCall) ([]*redis.Cmd, error) {
	if len(calls) == 1 {
		c := calls[0]
		return []*redis.Cmd{r.Run(ctx, c.Name, c.Keys, c.Args...)}, nil
	}
	if err := r.Load(ctx); err != nil {
		return nil, err
	}
	cmds := make([]*redis.Cmd, len(calls))
	pipe := r.rdb.Pipeline()
	for i, c := range calls {
		cmds[i] = r.Queue(ctx, pipe, c.Name, c.Keys, c.Args...)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own reply or error
	var missing []int
	for i, cmd := range cmds {
		if IsMissingScript(cmd.Err()) {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return cmds, nil
	}
	if err := r.Reload(ctx); err != nil {
		// Those calls did not run; their errors say why they could not run again.
		for _, i := range missing {
			cmds[i].SetErr(fmt.Errorf("%w (reloading the scripts: %w)", cmds[i].Err(), err))
		}
		return cmds, nil
	}
	pipe = r.rdb.Pipeline()
	for _, i := range missing {
		c := calls[i]
		cmds[i] = r.Queue(ctx, pipe, c.Name, c.Keys, c.Args...)
	}
	_, _ = pipe.Exec(ctx)
	return cmds, nil
}
