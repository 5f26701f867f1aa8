package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// publishesReady reports whether a lone job due now may take publish_ready.lua: the scripts run as
// library functions (Redis 7+, so cmsgpack encodes records), and no publish waits for replicas
// (runReplicated sends the queue's whole key set).
func (c *Client) publishesReady(ctx context.Context) bool {
	return !c.waitsForReplicas(scriptPublish) && c.scripts.UsesFunctions(ctx)
}

// publishReady publishes one job that dueNowPlain accepts with publish_ready.lua: four keys and
// three arguments where publish.lua takes twelve and twenty-one, and a record the client encoded.
func (c *Client) publishReady(ctx context.Context, k queueKeys, f *jobFields) ([]PublishResult, error) {
	head, tail := readyRecordAround(f)
	ready := k.readyList(f.priority)
	fn := c.scripts.Function(string(scriptPublishReady))
	cmd := c.processFunction(ctx, func() *redis.Cmd {
		cmd := redis.NewCmd(ctx, "fcall", fn, 4, k.jobs(), ready, k.prios(), k.stats(), f.id, head, tail)
		cmd.SetFirstKeyPos(3) // the first key routes the call on a cluster
		return cmd
	})
	reply, err := cmd.Result()
	if err != nil {
		return nil, err
	}
	if reply != int64(1) {
		return nil, fmt.Errorf("unexpected reply %v from %s", reply, fn)
	}
	return []PublishResult{{ID: f.id}}, nil
}
