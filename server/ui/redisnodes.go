package ui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisNode is one node of a Redis Cluster on the servers page: its address and role; its
// figures are live (nodeLive).
type redisNode struct {
	Addr, Role string
}

// cpuReading is a node's CPU time (INFO's used_cpu_sys + used_cpu_user, seconds) when it was read.
type cpuReading struct {
	at  time.Time
	cpu float64
}

// nodeCPU remembers each node's last CPU reading, so that a refresh of the page shows the share of
// a core the node used since the one before. It holds the nodes of the latest read only.
type nodeCPU struct {
	mu   sync.Mutex
	last map[string]cpuReading
}

// share is the share of one core (percent) node addr used between its last reading and r, and
// false on its first reading (or a clock or counter that went back: a restarted node).
func (n *nodeCPU) share(addr string, r cpuReading) (float64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	prev, ok := n.last[addr]
	n.last[addr] = r
	wall := r.at.Sub(prev.at).Seconds()
	if !ok || wall <= 0 || r.cpu < prev.cpu {
		return 0, false
	}
	return 100 * (r.cpu - prev.cpu) / wall, true
}

// forget drops the readings of the nodes not in addrs (nodes that left the cluster).
func (n *nodeCPU) forget(addrs []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for a := range n.last {
		if !slices.Contains(addrs, a) {
			delete(n.last, a)
		}
	}
}

// clusterNodes reads INFO on every node of a Redis Cluster (primaries and replicas, at once) and
// puts each node's memory, CPU and clients into l under "node:<addr>:"; nil when Redis is not a
// Cluster.
func (u *UI) clusterNodes(ctx context.Context, l live) ([]redisNode, error) {
	cc, ok := u.cfg.Redis.(*redis.ClusterClient)
	if !ok {
		return nil, nil
	}
	var mu sync.Mutex
	var nodes []redisNode
	infos := map[string]map[string]string{}
	err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "memory", "cpu", "clients", "replication").Result()
		if err != nil {
			return fmt.Errorf("ui: redis info of %s: %w", c.Options().Addr, err)
		}
		f, addr := infoFields(info), c.Options().Addr
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, redisNode{Addr: addr, Role: roleName(f["role"])})
		infos[addr] = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b redisNode) int { return strings.Compare(a.Addr, b.Addr) })
	now := time.Now()
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		f, k := infos[n.Addr], "node:"+n.Addr+":"
		addrs[i] = n.Addr
		l[k+"memory"] = byteSize(f["used_memory"])
		l[k+"clients"] = f["connected_clients"]
		sys, _ := strconv.ParseFloat(f["used_cpu_sys"], 64)
		user, _ := strconv.ParseFloat(f["used_cpu_user"], 64)
		l[k+"cpu"] = "–"
		if pct, ok := u.nodeCPU.share(n.Addr, cpuReading{at: now, cpu: sys + user}); ok {
			l[k+"cpu"] = strconv.FormatFloat(pct, 'f', 1, 64) + "%"
		}
	}
	u.nodeCPU.forget(addrs)
	return nodes, nil
}

// roleName is INFO's role as the page says it: a "master" is a primary.
func roleName(role string) string {
	if role == "master" {
		return "primary"
	}
	return role
}
