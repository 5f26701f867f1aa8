package redisx

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"
)

// ErrOutcomeUnknown is wrapped by the error of a call sent once (ScriptRunner.RunNoRetry) that
// failed after it may have reached Redis: a read timeout, a broken connection, the caller's
// context ending while it waited for the reply. The script ran once or not at all; the client
// cannot tell which, and did not send it again, so it did not run twice.
var ErrOutcomeUnknown = errors.New("outcome unknown: the call may have run once (it was not sent again)")

// noRetryCmd is a command go-redis sends once: its NoRetry gate stops the resend after a read
// timeout or a broken connection that a plain command gets (up to MaxRetries times).
type noRetryCmd struct{ *redis.Cmd }

func (noRetryCmd) NoRetry() bool { return true }

// RunNoRetry runs script name like Run, but sends the call to Redis once: a call whose second
// arrival would count twice and that is too hot to keep a call key for (a rate limiter's
// decision) goes this way. A failure after the call may have reached Redis wraps
// ErrOutcomeUnknown (with the cause, so errors.Is still finds a context's error); a failure
// before it was sent (no connection, a dial error, a closed client) and Redis's own error replies
// are returned as they are. A node that had lost the scripts did not run the call: they are
// loaded and the call is sent again, as Run does.
func (r *ScriptRunner) RunNoRetry(ctx context.Context, name string, keys []string, argv ...any) *redis.Cmd {
	build := func() *redis.Cmd { return r.command(ctx, name, r.UsesFunctions(ctx), keys, argv) }
	cmd := build()
	_ = r.rdb.Process(ctx, noRetryCmd{cmd})
	if IsMissingScript(cmd.Err()) && r.Reload(ctx) == nil {
		cmd = build()
		_ = r.rdb.Process(ctx, noRetryCmd{cmd})
	}
	if err := cmd.Err(); mayHaveRun(err) {
		cmd.SetErr(fmt.Errorf("%s: %w: %w", r.owner, ErrOutcomeUnknown, err))
	}
	return cmd
}

// mayHaveRun reports whether a call that failed with err may have reached Redis and run: every
// failure but a reply from Redis (the call ran and answered an error, or did not run) and the
// failures to get a connection at all.
func mayHaveRun(err error) bool {
	var reply redis.Error
	var opErr *net.OpError
	switch {
	case err == nil, errors.As(err, &reply):
		return false
	case errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return false
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return false
	}
	return true
}
