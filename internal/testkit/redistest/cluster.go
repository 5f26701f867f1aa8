package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slotRanges splits the 16384 hash slots evenly over n masters.
func slotRanges(n int) [][2]int {
	out := make([][2]int, n)
	for i := range out {
		out[i] = [2]int{i * 16384 / n, (i+1)*16384/n - 1}
	}
	return out
}

// startCluster starts the shared 3-master test cluster.
func startCluster() (string, func(), error) { return startClusterOf(3) }

// StartCluster starts a Redis Cluster of the given number of masters (no replicas) for one test
// or benchmark, such as a scale-out benchmark comparing 1, 2 and 3 shards; it is stopped when the
// test ends. It returns the redis+cluster:// URL. Most tests want NewCluster (or Each), which
// share one 3-master cluster per test binary.
func StartCluster(t testing.TB, masters int) string {
	t.Helper()
	url, stop, err := startClusterOf(masters)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(stop)
	return url
}

// startClusterOf starts n cluster-enabled redis-servers, gives each an equal share of the slots,
// joins them and waits until every node reports a healthy cluster.
func startClusterOf(n int) (string, func(), error) {
	var nodes []*process
	stop := func() {
		for _, n := range nodes {
			n.stop()
		}
	}
	for range n {
		p, err := startServer(false, "cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 5000")
		if err != nil {
			stop()
			return "", nil, err
		}
		nodes = append(nodes, p)
	}
	if err := formCluster(nodes); err != nil {
		stop()
		return "", nil, fmt.Errorf("form cluster: %w", err)
	}
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	return "redis+cluster://" + strings.Join(addrs, ","), stop, nil
}

func formCluster(nodes []*process) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer clients[i].Close()
	}
	ranges := slotRanges(len(nodes))
	for i, c := range clients {
		r := ranges[i]
		if err := c.ClusterAddSlotsRange(ctx, r[0], r[1]).Err(); err != nil {
			return fmt.Errorf("addslots on %s: %w", nodes[i].Addr(), err)
		}
	}
	for _, n := range nodes[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", fmt.Sprint(n.Port)).Err(); err != nil {
			return fmt.Errorf("meet %s: %w", n.Addr(), err)
		}
	}
	for {
		if clusterReady(ctx, clients) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterReady reports whether every node sees a healthy cluster of all the masters.
func clusterReady(ctx context.Context, clients []*redis.Client) bool {
	for _, c := range clients {
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") ||
			!strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(clients))) {
			return false
		}
		shards, err := c.ClusterShards(ctx).Result()
		if err != nil || len(shards) != len(clients) {
			return false
		}
	}
	return true
}
