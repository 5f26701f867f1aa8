package ui

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// redisHealth is the servers page's Redis panel: what INFO (and, where allowed, CONFIG GET)
// says of the Redis the server uses.
type redisHealth struct {
	Version, Mode, Role, MaxPolicy, Persistence string
	// Nodes are a Cluster's nodes, each with its figures (none for another deployment).
	Nodes []redisNode
}

// serversData reads the servers running now and Redis's health; the live numbers are Redis's
// (they change every poll) and the layout names every server and consumer shown, so the page
// lists them again when one comes or goes.
func (u *UI) serversData(ctx context.Context) ([]ServerInfo, redisHealth, live, error) {
	servers, err := u.servers(ctx)
	if err != nil {
		return nil, redisHealth{}, nil, err
	}
	info, err := u.cfg.Redis.Info(ctx, "server", "memory", "stats", "persistence", "replication", "clients", "cluster").Result()
	if err != nil {
		return nil, redisHealth{}, nil, fmt.Errorf("ui: redis info: %w", err)
	}
	f := infoFields(info)
	h := redisHealth{Version: f["redis_version"], Mode: u.cfg.RedisMode, Role: f["role"], MaxPolicy: f["maxmemory_policy"], Persistence: u.persistence(ctx, f)}
	if f["cluster_enabled"] == "1" {
		h.Mode = "cluster"
	}
	l := live{
		"redis:memory":  byteSize(f["used_memory"]),
		"redis:max":     "no limit",
		"redis:ops":     f["instantaneous_ops_per_sec"] + "/s",
		"redis:clients": f["connected_clients"],
	}
	if m, _ := strconv.ParseInt(f["maxmemory"], 10, 64); m > 0 {
		l["redis:max"] = byteSize(f["maxmemory"])
	}
	if h.Nodes, err = u.clusterNodes(ctx, l); err != nil {
		return nil, redisHealth{}, nil, err
	}
	var layout strings.Builder
	for _, n := range h.Nodes {
		fmt.Fprintf(&layout, "node %s %s\n", n.Addr, n.Role)
	}
	for _, s := range servers {
		fmt.Fprintf(&layout, "%s %d\n", s.ID, s.ConsumerCount)
		for _, c := range s.Consumers {
			fmt.Fprintf(&layout, " %s|%s|%s|%s|%v\n", c.Namespace, c.Queues, c.Who, c.API, c.Waiting)
		}
	}
	l[layoutKey] = layout.String()
	return servers, h, l, nil
}

// byteSize writes a byte count from INFO in MiB (or KiB under one MiB).
func byteSize(v string) string {
	n, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil:
		return "unknown"
	case n < 1<<20:
		return strconv.FormatFloat(n/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(n/(1<<20), 'f', 1, 64) + " MiB"
}

// infoFields reads INFO's "name:value" lines.
func infoFields(info string) map[string]string {
	f := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok && !strings.HasPrefix(k, "#") {
			f[k] = v
		}
	}
	return f
}

// persistence describes how Redis keeps its data: append-only file (with its fsync policy) and
// snapshots (their rule), from CONFIG GET where the provider allows it, else from INFO alone.
func (u *UI) persistence(ctx context.Context, f map[string]string) string {
	cfg, err := u.cfg.Redis.ConfigGet(ctx, "appendfsync").Result()
	fsync := cfg["appendfsync"]
	if err != nil || fsync == "" {
		fsync = "fsync policy unknown"
	}
	var parts []string
	if f["aof_enabled"] == "1" {
		parts = append(parts, "append-only file ("+"appendfsync "+fsync+")")
	}
	save, err := u.cfg.Redis.ConfigGet(ctx, "save").Result()
	switch {
	case err == nil && save["save"] != "":
		parts = append(parts, "snapshots (save "+save["save"]+")")
	case err != nil && f["rdb_last_save_time"] != "":
		parts = append(parts, "snapshots (rule unknown)")
	}
	if len(parts) == 0 {
		return "none: a restart loses every job"
	}
	return strings.Join(parts, " and ")
}

func (u *UI) serversPage(w http.ResponseWriter, r *http.Request) error {
	servers, h, l, err := u.serversData(r.Context())
	if err != nil {
		return err
	}
	u.render(w, r, http.StatusOK, "servers", "Servers", map[string]any{
		"Servers": servers, "Redis": h, "Live": l, "Poll": "/ui/api/servers",
	})
	return nil
}

func (u *UI) serversJSON(w http.ResponseWriter, r *http.Request) error {
	_, _, l, err := u.serversData(r.Context())
	if err != nil {
		return err
	}
	return writeLive(w, l)
}
