package cli

import (
	"context"
	"fmt"
	"net/http"
)

func schedulePath(ns, name string) string {
	return "/v1/ns/" + pathEscape(ns) + "/schedules/" + pathEscape(name)
}

// scheduleAnswer is the part of a schedule the tables show.
type scheduleAnswer struct {
	Name     string  `json:"name"`
	Cron     string  `json:"cron"`
	Every    float64 `json:"every"`
	Timezone string  `json:"timezone"`
	Job      struct {
		Queue string `json:"queue"`
	} `json:"job"`
	CatchUp   string `json:"catch_up"`
	Paused    bool   `json:"paused"`
	NextRun   any    `json:"next_run"`
	LastRun   any    `json:"last_run"`
	LastJobID string `json:"last_job_id"`
	Missed    int64  `json:"missed"`
	Fires     int64  `json:"fires"`
}

func scheduleHeader(env *Env) *table {
	return newTable(env.Stdout, "NAME", "RULE", "ZONE", "QUEUE", "NEXT RUN", "LAST RUN", "FIRES", "MISSED", "PAUSED")
}

func (s scheduleAnswer) row(t *table) {
	rule := s.Cron
	if rule == "" {
		rule = fmt.Sprintf("every %gs", s.Every)
	}
	t.row(s.Name, rule, s.Timezone, s.Job.Queue, when(s.NextRun), when(s.LastRun),
		fmt.Sprint(s.Fires), fmt.Sprint(s.Missed), fmt.Sprint(s.Paused))
}

func runScheduleSet(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "schedule set", "[flags] <name> <queue> [payload]", `
Create or replace a schedule: at each tick of --cron (in --timezone) or --every, one job with
the payload is published to the queue, exactly once however many servers run. The payload is
read as by `+"`sluice publish`"+` (argument, or standard input when missing or "-"); so are the
job flags.

Examples:
  sluice schedule set nightly-report reports --cron '0 2 * * *' --timezone Europe/Berlin '{"kind":"daily"}'
  sluice schedule set heartbeat pings --every 30s --catch-up skip '{}'
  sluice schedule set close-orders orders --cron @hourly --callback https://api.example.com/hooks/close '{}'`)
	cf := addConnFlags(fs, env)
	jf := addJobFlags(fs)
	cron := fs.String("cron", "", "cron `expression`: five fields, six with seconds first, or @daily, @hourly...")
	var every, jitter seconds
	fs.Var(&every, "every", "tick every `duration` (at least 1s) instead of --cron")
	zone := fs.String("timezone", "", "IANA time `zone` the cron expression is read in (default UTC)")
	catchUp := fs.String("catch-up", "", "missed ticks after an outage: `skip`, one (default) or all")
	fs.Var(&jitter, "jitter", "delay each tick's job by a random time below this `duration`")
	start := fs.String("start", "", "first possible tick, an RFC 3339 `time`")
	end := fs.String("end", "", "last possible tick, an RFC 3339 `time`")
	paused := fs.Bool("paused", false, "create the schedule paused")
	pos, err := parseArgs(fs, args, 2, 3, "<name> <queue> [payload]")
	if err != nil {
		return err
	}
	if (*cron == "") == !every.set {
		return usagef("give --cron or --every")
	}
	job, err := jf.job(env, pos[len(pos)-1], len(pos) == 3)
	if err != nil {
		return err
	}
	job["queue"] = pos[1]
	body := map[string]any{"job": job, "paused": *paused}
	for k, v := range map[string]string{"cron": *cron, "timezone": *zone, "catch_up": *catchUp, "start_at": *start, "end_at": *end} {
		if v != "" {
			body[k] = v
		}
	}
	if every.set {
		body["every"] = secs(every.d)
	}
	if jitter.set {
		body["jitter"] = secs(jitter.d)
	}
	var s scheduleAnswer
	if err := cf.show(ctx, http.MethodPut, schedulePath(cf.ns, pos[0]), nil, body, &s); err != nil || cf.json {
		return err
	}
	fmt.Fprintf(cf.out(), "schedule %s/%s set; next run %s\n", cf.ns, s.Name, when(s.NextRun))
	return nil
}

func runScheduleList(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "schedule list", "[flags]", `
List the namespace's schedules in name order: rule, zone, queue, next and last run, jobs
published and ticks missed. When more remain, the next page's --after is printed.`)
	cf := addConnFlags(fs, env)
	limit := fs.Int("limit", 0, "most schedules to list (default 100)")
	after := fs.String("after", "", "list the schedules after this `name`")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	query := pageQuery(*limit, "after", *after)
	var ans struct {
		Schedules []scheduleAnswer `json:"schedules"`
		NextAfter string           `json:"next_after"`
	}
	if err := cf.show(ctx, http.MethodGet, "/v1/ns/"+pathEscape(cf.ns)+"/schedules", query, nil, &ans); err != nil || cf.json {
		return err
	}
	if len(ans.Schedules) == 0 {
		fmt.Fprintf(cf.out(), "no schedules in namespace %s\n", cf.ns)
		return nil
	}
	t := scheduleHeader(env)
	for _, s := range ans.Schedules {
		s.row(t)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if ans.NextAfter != "" {
		fmt.Fprintf(cf.out(), "more: --after %s\n", ans.NextAfter)
	}
	return nil
}

func runScheduleGet(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "schedule get", "[flags] <name>", `
Show one schedule (--json for every field, the job template included).`)
	cf := addConnFlags(fs, env)
	pos, err := parseArgs(fs, args, 1, 1, "<name>")
	if err != nil {
		return err
	}
	var s scheduleAnswer
	if err := cf.show(ctx, http.MethodGet, schedulePath(cf.ns, pos[0]), nil, nil, &s); err != nil || cf.json {
		return err
	}
	t := scheduleHeader(env)
	s.row(t)
	return t.flush()
}

// scheduleActions are the commands on one schedule by name: the HTTP call each makes and its help.
var scheduleActions = map[string]struct{ method, suffix, summary, help string }{
	"delete": {http.MethodDelete, "", "delete a schedule", "Delete a schedule. The jobs it published stay in their queue."},
	"pause": {http.MethodPost, "/pause", "pause a schedule",
		"Pause a schedule: its ticks neither fire nor count as missed until resumed."},
	"resume": {http.MethodPost, "/resume", "resume a paused schedule", "Resume a paused schedule at its first tick after now."},
	"trigger": {http.MethodPost, "/trigger", "publish a schedule's job now",
		"Publish the schedule's job now, paused or not; its next run stays as it is."},
}

// runScheduleAction is schedule delete, pause, resume or trigger.
func runScheduleAction(action string) func(ctx context.Context, env *Env, args []string) error {
	act := scheduleActions[action]
	return func(ctx context.Context, env *Env, args []string) error {
		fs := newFlags(env, "schedule "+action, "[flags] <name>", "\n"+act.help)
		cf := addConnFlags(fs, env)
		pos, err := parseArgs(fs, args, 1, 1, "<name>")
		if err != nil {
			return err
		}
		var ans struct {
			scheduleAnswer
			publishAnswer
		}
		if err := cf.show(ctx, act.method, schedulePath(cf.ns, pos[0])+act.suffix, nil, nil, &ans); err != nil || cf.json {
			return err
		}
		switch {
		case action == "delete":
			fmt.Fprintf(cf.out(), "deleted schedule %s/%s\n", cf.ns, pos[0])
		case action != "trigger":
			fmt.Fprintf(cf.out(), "schedule %s/%s %sd; next run %s\n", cf.ns, pos[0], action, when(ans.NextRun))
		case ans.Duplicate:
			fmt.Fprintf(cf.out(), "duplicate: the job's unique key is held; nothing published\n")
		default:
			fmt.Fprintf(cf.out(), "published job %s\n", ans.JobID)
		}
		return nil
	}
}
