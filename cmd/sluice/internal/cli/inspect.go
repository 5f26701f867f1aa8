package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// depthColumns are the stats shown in the queue table, in order.
var depthColumns = []string{"ready", "delayed", "leased", "dead", "done"}

func runStats(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "stats", "[flags] [queue]", `
Show the queues of the namespace with their depths (ready, delayed, leased, dead, done) and
whether they are paused, a page at a time, or one queue's depths and counters in full.

Examples:
  sluice stats
  sluice stats --limit 500
  sluice stats emails --json`)
	cf := addConnFlags(fs, env)
	cursor := fs.String("cursor", "", "continue the list of queues from the `cursor` printed under the previous page")
	limit := fs.Int("limit", 0, "about how many queues a page lists (1..1000; default 100)")
	pos, err := parseArgs(fs, args, 0, 1, "at most one queue")
	if err != nil {
		return err
	}
	path := "/v1/ns/" + pathEscape(cf.ns) + "/queues"
	if len(pos) == 1 {
		path = queuePath(cf.ns, pos[0])
	}
	query := url.Values{}
	if *cursor != "" {
		query.Set("cursor", *cursor)
	}
	if *limit != 0 {
		query.Set("limit", strconv.Itoa(*limit))
	}
	var ans map[string]any
	if err := cf.show(ctx, http.MethodGet, path, query, nil, &ans); err != nil || cf.json {
		return err
	}
	if len(pos) == 1 {
		return printQueue(cf, pos[0], ans)
	}
	if next, _ := ans["next_cursor"].(string); next != "" {
		defer fmt.Fprintf(cf.out(), "more queues: sluice stats --ns %s --cursor %s\n", cf.ns, next)
	}
	list, _ := ans["queues"].([]any)
	if len(list) == 0 {
		fmt.Fprintf(cf.out(), "no queues in namespace %s\n", cf.ns)
		return nil
	}
	t := newTable(cf.out(), append(append([]string{"QUEUE"}, upper(depthColumns)...), "PAUSED")...)
	for _, item := range list {
		q, _ := item.(map[string]any)
		f := flatten(q)
		row := []string{text(f["name"])}
		for _, c := range depthColumns {
			row = append(row, text(f[c]))
		}
		t.row(append(row, text(f["paused"]))...)
	}
	return t.flush()
}

// printQueue shows one queue: its depths, then every other figure the server reports.
func printQueue(cf *connFlags, name string, q map[string]any) error {
	f := flatten(q)
	fmt.Fprintf(cf.out(), "queue %s/%s\n", cf.ns, name)
	t := newTable(cf.out())
	shown := map[string]bool{"name": true, "queue": true, "namespace": true}
	for _, c := range append(depthColumns, "paused") {
		if v, ok := f[c]; ok {
			t.row("  "+c, text(v))
			shown[c] = true
		}
	}
	for k, v := range sortedMap(f) {
		if !shown[k] {
			t.row("  "+k, text(v))
		}
	}
	return t.flush()
}

// flatten lifts the fields of nested objects ({"stats": {"ready": 1}}) to the top level, so the
// tables do not depend on how the server groups its figures. A queue's name may be under "name"
// or "queue".
func flatten(m map[string]any) map[string]any {
	out := map[string]any{}
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(sub)
				continue
			}
			if _, dup := out[k]; !dup {
				out[k] = v
			}
		}
	}
	walk(m)
	if _, ok := out["name"]; !ok {
		out["name"] = out["queue"]
	}
	return out
}

func upper(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(s)
	}
	return out
}

func runDeadList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "dead list", "[flags] <queue>", `
List the jobs in a queue's dead letter, oldest first: id, when it died, deliveries, last error
and the start of its payload. When more remain, the next page's --cursor is printed.

Example:
  sluice dead list emails --limit 20`)
	cf := addConnFlags(fs, env)
	limit := fs.Int("limit", 0, "most jobs to list (default: the server's page size)")
	cursor := fs.String("cursor", "", "continue from this `cursor` (printed by the previous page)")
	pos, err := parseArgs(fs, args, 1, 1, "<queue>")
	if err != nil {
		return err
	}
	query := pageQuery(*limit, "cursor", *cursor)
	var ans struct {
		Jobs       []map[string]any `json:"jobs"`
		NextCursor string           `json:"next_cursor"`
		Cursor     string           `json:"cursor"`
		Total      *int64           `json:"total"`
	}
	if err := cf.show(ctx, http.MethodGet, queuePath(cf.ns, pos[0])+"/dead", query, nil, &ans); err != nil || cf.json {
		return err
	}
	if len(ans.Jobs) == 0 {
		fmt.Fprintf(cf.out(), "the dead letter of %s/%s is empty\n", cf.ns, pos[0])
		return nil
	}
	t := newTable(cf.out(), "JOB", "DIED", "DELIVERIES", "LAST ERROR", "PAYLOAD")
	for _, j := range ans.Jobs {
		f := flatten(j)
		payload, _ := json.Marshal(j["payload"])
		b64, _ := j["payload_base64"].(string)
		t.row(text(first(f, "job_id", "id")), when(first(f, "finished_at", "died_at", "dead_at")),
			text(first(f, "deliveries", "delivery")), clip(text(first(f, "last_error", "error")), 40),
			clip(payloadText(payload, b64), 40))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if ans.Total != nil {
		fmt.Fprintf(cf.out(), "%d of %d dead job(s)\n", len(ans.Jobs), *ans.Total)
	}
	if next := cmp.Or(ans.NextCursor, ans.Cursor); next != "" {
		fmt.Fprintf(cf.out(), "more: sluice dead list %s --cursor %s\n", pos[0], next)
	}
	return nil
}

func first(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil && v != "" {
			return v
		}
	}
	return nil
}

func runDeadRespawn(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "dead respawn", "[flags] <queue> [job-id...]", `
Put dead jobs back in their queue, ready for delivery with their tries renewed: the named jobs, or
the --limit oldest ones.

Examples:
  sluice dead respawn emails --limit 100
  sluice dead respawn emails 01JD3M5R6W8X9Y0Z1A2B3C4D5E --ttl 1h`)
	cf := addConnFlags(fs, env)
	limit := fs.Int("limit", 0, "respawn the `n` oldest dead jobs")
	var ttl seconds
	fs.Var(&ttl, "ttl", "give the respawned jobs this lifetime (`duration`)")
	pos, err := parseArgs(fs, args, 1, -1, "<queue> [job-id...]")
	if err != nil {
		return err
	}
	ids := pos[1:]
	if len(ids) == 0 && *limit <= 0 {
		return usagef("name the jobs to respawn, or --limit n for the n oldest")
	}
	if len(ids) > 0 && *limit > 0 {
		return usagef("name jobs or pass --limit, not both")
	}
	body := map[string]any{}
	if len(ids) > 0 {
		body["ids"] = ids
	} else {
		body["limit"] = *limit
	}
	if ttl.set {
		body["ttl"] = secs(ttl.d)
	}
	var ans map[string]any
	if err := cf.show(ctx, http.MethodPost, queuePath(cf.ns, pos[0])+"/dead/respawn", nil, body, &ans); err != nil || cf.json {
		return err
	}
	n := 0
	switch v := first(ans, "ids", "job_ids", "jobs").(type) {
	case []any:
		n = len(v)
	}
	if c, ok := first(ans, "respawned", "count").(float64); ok {
		n = int(c)
	}
	fmt.Fprintf(cf.out(), "respawned %d job(s) in %s/%s\n", n, cf.ns, pos[0])
	return nil
}

// pageQuery is the query of a page of a list: its limit (0: the server's default) and where it
// starts (from, the value of parameter key; "": the first page).
func pageQuery(limit int, key, from string) url.Values {
	query := url.Values{}
	if limit > 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	if from != "" {
		query.Set(key, from)
	}
	return query
}
