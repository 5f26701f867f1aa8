package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The request queue's commands: tasks on the public API (a token with the tasks permission),
// endpoints on the admin API.

// taskAnswer is the part of a task the commands print.
type taskAnswer struct {
	TaskID     string   `json:"task_id"`
	TaskStatus string   `json:"task_status"`
	Endpoint   string   `json:"endpoint"`
	Priority   int      `json:"priority"`
	WaitNum    int64    `json:"wait_num"`
	WaitTime   *float64 `json:"wait_time"`
	HTTPStatus int      `json:"http_status"`
	TaskResult *string  `json:"task_result"`
	Error      string   `json:"error"`
	Tries      int      `json:"tries"`
	Permit     string   `json:"permit"`
	Cancelled  bool     `json:"cancelled"`
}

func taskPath(id string) string { return "/v1/tasks/" + pathEscape(id) }

func runTaskSubmit(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "task submit", "[flags] <endpoint | target-url> [body]", `
Queue a call to a request-queue endpoint, by its name or by a URL under its target URL. The
request body is the second argument, or standard input when it is "-". Offline tasks (the
default) are called by the server; --online tasks get a permit when their turn comes. --wait
waits for the task to end (or be permitted) and prints it.

Examples:
  sluice task submit imagegen '{"prompt":"a lighthouse"}'
  sluice task submit --method GET --query size=4 https://imagegen.example.com/v1/render
  sluice task submit --online --wait 60s imagegen
  sluice task submit --callback https://api.example.com/hooks/images imagegen '{"prompt":"a fox"}'`)
	cf := addConnFlags(fs, env)
	method := fs.String("method", "", "HTTP `method` of the call (default POST)")
	headers, query := keyValues{}, keyValues{}
	fs.Var(headers, "header", "request header `name=value` (repeatable)")
	fs.Var(query, "query", "query parameter `name=value` (repeatable)")
	priority := fs.Int("priority", 0, "`priority` 0..255 (lowered to the token's cap or a grant's)")
	online := fs.Bool("online", false, "an online task: wait for a permit and call the endpoint yourself")
	subject := fs.String("subject", "", "who the task is for (a user id): its fairness subject with a tasks:delegate token; the subject of --grant")
	grant := fs.String("grant", "", "a priority `grant` signed by your backend for --subject")
	callbackURL := fs.String("callback", "", "POST the task's final state to this `URL` when it ends (signed; see docs/relay.md)")
	var wait seconds
	fs.Var(&wait, "wait", "then wait up to this `duration` for the task to end (or be permitted)")
	pos, err := parseArgs(fs, args, 1, 2, "<endpoint | target-url> [body]")
	if err != nil {
		return err
	}
	body := map[string]any{"priority": *priority}
	if strings.Contains(pos[0], "://") {
		body["target_url"] = pos[0]
	} else {
		body["endpoint"] = pos[0]
	}
	if len(pos) == 2 {
		b := pos[1]
		if b == "-" {
			data, err := io.ReadAll(env.Stdin)
			if err != nil {
				return fmt.Errorf("read the body from standard input: %w", err)
			}
			b = string(data)
		}
		body["body"] = b
	}
	if *method != "" {
		body["http_method"] = *method
	}
	if len(headers) > 0 {
		body["headers"] = map[string]string(headers)
	}
	if len(query) > 0 {
		body["query_params"] = map[string]string(query)
	}
	if *online {
		body["task_type"] = "online"
	}
	if *subject != "" {
		body["subject"] = *subject
	}
	if *grant != "" {
		body["priority_grant"] = *grant
	}
	if *callbackURL != "" {
		body["callback"] = map[string]any{"url": *callbackURL}
	}
	var ans taskAnswer
	data, err := cf.client().callJSON(ctx, http.MethodPost, "/v1/tasks", nil, body, &ans)
	if err != nil {
		return err
	}
	if wait.set {
		return getTask(ctx, cf, ans.TaskID, wait)
	}
	if cf.json {
		return printJSON(env.Stdout, data)
	}
	fmt.Fprintf(env.Stdout, "queued task %s at %s (priority %d, %d ahead)\n", ans.TaskID, ans.Endpoint, ans.Priority, ans.WaitNum)
	return nil
}

func runTaskGet(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "task get", "[flags] <task-id>", `
Show a task: its status, position and estimated wait while pending, its result once it ended.
--wait waits (long-poll, no busy polling) up to that long for it to end or be permitted.

Examples:
  sluice task get imagegen.01J9Z...
  sluice task get --wait 30s --json imagegen.01J9Z... | jq -r .task_result`)
	cf := addConnFlags(fs, env)
	var wait seconds
	fs.Var(&wait, "wait", "wait up to this `duration` for the task to end (or be permitted)")
	pos, err := parseArgs(fs, args, 1, 1, "<task-id>")
	if err != nil {
		return err
	}
	return getTask(ctx, cf, pos[0], wait)
}

func getTask(ctx context.Context, cf *connFlags, id string, wait seconds) error {
	q := url.Values{}
	if wait.set {
		q.Set("wait", wait.d.String())
		// The request lasts as long as the wait.
		cf.timeout += wait.d
	}
	var t taskAnswer
	if err := cf.show(ctx, http.MethodGet, taskPath(id), q, nil, &t); err != nil || cf.json {
		return err
	}
	w := cf.out()
	fmt.Fprintf(w, "task %s at %s: %s\n", t.TaskID, t.Endpoint, t.TaskStatus)
	switch t.TaskStatus {
	case "pending":
		eta := "unknown"
		if t.WaitTime != nil {
			eta = fmt.Sprintf("%.1fs", *t.WaitTime)
		}
		fmt.Fprintf(w, "%d ahead, estimated wait %s\n", t.WaitNum, eta)
	case "permitted":
		fmt.Fprintf(w, "permit (send as Sluice-Permit): %s\n", t.Permit)
	}
	if t.HTTPStatus != 0 {
		fmt.Fprintf(w, "http status %d after %d tries\n", t.HTTPStatus, t.Tries)
	}
	if t.Error != "" {
		fmt.Fprintf(w, "error: %s\n", t.Error)
	}
	if t.TaskResult != nil {
		fmt.Fprintln(w, *t.TaskResult)
	}
	return nil
}

func runTaskCancel(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "task cancel", "[flags] <task-id>", `
Cancel a task: a waiting one at once, a running offline call has its result discarded, a
permitted online task's permit stops working. A task that had ended keeps its status.

Example:
  sluice task cancel imagegen.01J9Z...`)
	cf := addConnFlags(fs, env)
	pos, err := parseArgs(fs, args, 1, 1, "<task-id>")
	if err != nil {
		return err
	}
	var t taskAnswer
	if err := cf.show(ctx, http.MethodDelete, taskPath(pos[0]), nil, nil, &t); err != nil || cf.json {
		return err
	}
	if t.Cancelled {
		fmt.Fprintf(env.Stdout, "cancelled task %s\n", t.TaskID)
	} else {
		fmt.Fprintf(env.Stdout, "task %s had ended already: %s\n", t.TaskID, t.TaskStatus)
	}
	return nil
}

func endpointPath(name string) string { return "/v1/endpoints/" + pathEscape(name) }

func runEndpointSet(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "endpoint set", "[flags] <name>", `
Create or replace a request-queue endpoint (the admin API). Settings left out take their
defaults; every server instance applies the change before the command returns.

Example:
  sluice endpoint set imagegen --target-url https://imagegen.example.com/v1 --qps 20 \
      --concurrency 8 --timeout 2m --avg-duration 15s --max-queued-per-subject 20`)
	af := addAdminFlags(fs, env)
	target := fs.String("target-url", "", "http(s) `URL` tasks call (or a URL under it); required")
	qps := fs.Float64("qps", 0, "calls started per second across all instances (0: no rate limit)")
	conc := fs.Int("concurrency", 0, "calls in flight at once (default 1)")
	maxQueued := fs.Int("max-queued", 0, "most waiting tasks (default 10000)")
	perSubject := fs.Int("max-queued-per-subject", 0, "most waiting tasks of one subject (0: no bound)")
	fair := fs.Bool("fair-share", false, "subjects take turns within a priority, one task each per round")
	tries := fs.Int("tries", 0, "most attempts of an offline call (default 3)")
	var timeout, queueTimeout, avg, permitTTL seconds
	fs.Var(&timeout, "timeout", "`duration` one call may take (default 30s)")
	fs.Var(&queueTimeout, "queue-timeout", "longest `duration` a task waits for its turn")
	fs.Var(&avg, "avg-duration", "expected `duration` of a call, for ETAs before calls were measured")
	fs.Var(&permitTTL, "permit-ttl", "`duration` an online task's permit is valid (default 1m)")
	permitMethods := fs.String("permit-methods", "", "comma-separated `methods` a permit admits a call with (default any)")
	permitPath := fs.String("permit-path-prefix", "", "`path` a permitted call must be under (default any)")
	pos, err := parseArgs(fs, args, 1, 1, "<name>")
	if err != nil {
		return err
	}
	if *target == "" {
		return usagef("--target-url is required")
	}
	body := map[string]any{"target_url": *target}
	set := func(k string, v, zero any) {
		if v != zero {
			body[k] = v
		}
	}
	set("qps", *qps, 0.0)
	set("concurrency", *conc, 0)
	set("max_queued", *maxQueued, 0)
	set("max_queued_per_subject", *perSubject, 0)
	set("fair_share", *fair, false)
	set("tries", *tries, 0)
	set("permit_path_prefix", *permitPath, "")
	if *permitMethods != "" {
		body["permit_methods"] = strings.Split(*permitMethods, ",")
	}
	for k, d := range map[string]seconds{"timeout": timeout, "queue_timeout": queueTimeout, "avg_duration": avg, "permit_ttl": permitTTL} {
		if d.set {
			body[k] = d.d.Seconds()
		}
	}
	if err := af.show(ctx, http.MethodPut, endpointPath(pos[0]), nil, body, nil); err != nil || af.json {
		return err
	}
	fmt.Fprintf(env.Stdout, "endpoint %s set\n", pos[0])
	return nil
}

// endpointAnswer is the part of an endpoint the commands print.
type endpointAnswer struct {
	Name        string  `json:"name"`
	TargetURL   string  `json:"target_url"`
	QPS         float64 `json:"qps"`
	Concurrency int     `json:"concurrency"`
	Stats       struct {
		Queued          int64   `json:"queued"`
		Running         int64   `json:"running"`
		CompletedPerSec float64 `json:"completed_per_sec"`
		ETA             []struct {
			WaitNum  int64    `json:"wait_num"`
			WaitTime *float64 `json:"wait_time"`
		} `json:"eta"`
	} `json:"stats"`
}

func (e endpointAnswer) row(t *table) {
	eta := "-"
	if n := len(e.Stats.ETA); n > 0 && e.Stats.ETA[n-1].WaitTime != nil {
		eta = fmt.Sprintf("%.1fs", *e.Stats.ETA[n-1].WaitTime)
	}
	qps := "-"
	if e.QPS > 0 {
		qps = fmt.Sprint(e.QPS)
	}
	t.row(e.Name, qps, fmt.Sprint(e.Concurrency), fmt.Sprint(e.Stats.Queued), fmt.Sprint(e.Stats.Running),
		fmt.Sprintf("%.1f", e.Stats.CompletedPerSec), eta, e.TargetURL)
}

func endpointHeader(env *Env) *table {
	return newTable(env.Stdout, "NAME", "QPS", "CONCURRENCY", "QUEUED", "RUNNING", "DONE/S", "WAIT(NEW)", "TARGET")
}

func runEndpointList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "endpoint list", "[flags]", `
List the request queue's endpoints with live stats: tasks queued and running, calls finished per
second, and the estimated wait of a task submitted now.`)
	af := addAdminFlags(fs, env)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	var ans struct{ Endpoints []endpointAnswer }
	if err := af.show(ctx, http.MethodGet, "/v1/endpoints", nil, nil, &ans); err != nil || af.json {
		return err
	}
	t := endpointHeader(env)
	for _, e := range ans.Endpoints {
		e.row(t)
	}
	return t.flush()
}

func runEndpointGet(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "endpoint get", "[flags] <name>", `
Show one endpoint's settings and live stats (--json for every field).`)
	af := addAdminFlags(fs, env)
	pos, err := parseArgs(fs, args, 1, 1, "<name>")
	if err != nil {
		return err
	}
	var e endpointAnswer
	if err := af.show(ctx, http.MethodGet, endpointPath(pos[0]), nil, nil, &e); err != nil || af.json {
		return err
	}
	t := endpointHeader(env)
	e.row(t)
	return t.flush()
}

func runEndpointDelete(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "endpoint delete", "[flags] <name>", `
Delete an endpoint. Its waiting tasks end as cancelled; calls under way finish.`)
	af := addAdminFlags(fs, env)
	pos, err := parseArgs(fs, args, 1, 1, "<name>")
	if err != nil {
		return err
	}
	if _, err := af.client().call(ctx, http.MethodDelete, endpointPath(pos[0]), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "deleted endpoint %s\n", pos[0])
	return nil
}
