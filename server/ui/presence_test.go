package ui

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// TestPresenceBounded: a server flooded with distinct consumers tracks maxTrackedConsumers, lists
// maxListedConsumers in its heartbeat and counts them all; a consumer done for longer than the
// grace is forgotten; the index drops expired servers and a leaving server at once.
func TestPresenceBounded(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	u, _ := setup(t, env)
	p := u.presence
	ctx := ctxT(t)
	var dones []func()
	for i := range maxTrackedConsumers + 50 {
		dones = append(dones, p.Watch(ctx, APINative, "ns", []string{fmt.Sprintf("q%d", i)}))
	}
	info := p.snapshot(time.Now())
	if info.ConsumerCount != maxTrackedConsumers+50 || len(info.Consumers) != maxListedConsumers || len(p.consumers) != maxTrackedConsumers {
		t.Fatalf("count %d, listed %d, tracked %d", info.ConsumerCount, len(info.Consumers), len(p.consumers))
	}
	for _, done := range dones {
		done()
	}
	if info = p.snapshot(time.Now()); info.ConsumerCount != maxTrackedConsumers || info.Consumers[0].Waiting {
		t.Fatalf("after the consumes answered: count %d, first %+v", info.ConsumerCount, info.Consumers[0])
	}
	if info = p.snapshot(time.Now().Add(consumerGrace + time.Second)); info.ConsumerCount != 0 || len(p.consumers) != 0 {
		t.Fatalf("after the grace: count %d, tracked %d", info.ConsumerCount, len(p.consumers))
	}

	// A crashed server's entry (expired) goes at the next heartbeat of any server.
	if err := env.Client.ZAdd(ctx, serversKey(env.Prefix), redisZ(1, "crashed")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	servers, err := u.servers(ctx)
	if err != nil || len(servers) != 1 || servers[0].ID != p.info.ID {
		t.Fatalf("servers %+v %v", servers, err)
	}
	if ids, _ := env.Client.ZRange(ctx, serversKey(env.Prefix), 0, -1).Result(); len(ids) != 1 {
		t.Fatalf("index %v, want this server only", ids)
	}
	if err := p.send(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if servers, err := u.servers(ctx); err != nil || len(servers) != 0 {
		t.Fatalf("after leaving: %+v %v", servers, err)
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
