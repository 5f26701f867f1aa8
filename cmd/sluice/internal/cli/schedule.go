package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

func registerSchedules(t map[string]command) {
	t["schedule set"] = command{"create or replace a cron or every schedule that publishes a job per tick", runScheduleSet}
	t["schedule list"] = command{"list schedules with their next and last runs", runScheduleList}
	t["schedule get"] = command{"show a schedule", runScheduleGet}
	t["schedule delete"] = command{"delete a schedule", runScheduleDelete}
	t["schedule pause"] = command{"pause a schedule", runScheduleAction("pause")}
	t["schedule resume"] = command{"resume a paused schedule", runScheduleAction("resume")}
	t["schedule trigger"] = command{"publish a schedule's job now", runScheduleTrigger}
}

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
		rule = "every " + (time.Duration(s.Every * float64(time.Second))).String()
	}
	t.row(s.Name, rule, s.Timezone, s.Job.Queue, when(s.NextRun), when(s.LastRun),
		strconv.FormatInt(s.Fires, 10), strconv.FormatInt(s.Missed, 10), strconv.FormatBool(s.Paused))
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
	query := url.Values{}
	if *limit > 0 {
		query.Set("limit", strconv.Itoa(*limit))
	}
	if *after != "" {
		query.Set("after", *after)
	}
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

func runScheduleDelete(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "schedule delete", "[flags] <name>", `
Delete a schedule. The jobs it published stay in their queue.`)
	cf := addConnFlags(fs, env)
	pos, err := parseArgs(fs, args, 1, 1, "<name>")
	if err != nil {
		return err
	}
	if _, err := cf.client().call(ctx, http.MethodDelete, schedulePath(cf.ns, pos[0]), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(cf.out(), "deleted schedule %s/%s\n", cf.ns, pos[0])
	return nil
}

// runScheduleAction is schedule pause or resume.
func runScheduleAction(action string) func(ctx context.Context, env *Env, args []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		fs := newFlags(env, "schedule "+action, "[flags] <name>", `
Pause a schedule (its ticks neither fire nor count as missed) or resume it at its first tick
after now.`)
		cf := addConnFlags(fs, env)
		pos, err := parseArgs(fs, args, 1, 1, "<name>")
		if err != nil {
			return err
		}
		var s scheduleAnswer
		if err := cf.show(ctx, http.MethodPost, schedulePath(cf.ns, pos[0])+"/"+action, nil, nil, &s); err != nil || cf.json {
			return err
		}
		fmt.Fprintf(cf.out(), "schedule %s/%s %sd; next run %s\n", cf.ns, s.Name, action, when(s.NextRun))
		return nil
	}
}

func runScheduleTrigger(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "schedule trigger", "[flags] <name>", `
Publish the schedule's job now, paused or not; its next run stays as it is.`)
	cf := addConnFlags(fs, env)
	pos, err := parseArgs(fs, args, 1, 1, "<name>")
	if err != nil {
		return err
	}
	var ans publishAnswer
	if err := cf.show(ctx, http.MethodPost, schedulePath(cf.ns, pos[0])+"/trigger", nil, nil, &ans); err != nil || cf.json {
		return err
	}
	if ans.Duplicate {
		fmt.Fprintf(cf.out(), "duplicate: the job's unique key is held; nothing published\n")
		return nil
	}
	fmt.Fprintf(cf.out(), "published job %s\n", ans.JobID)
	return nil
}
