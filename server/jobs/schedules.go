package jobs

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// scheduleRoutes are the routes of a namespace's schedules (docs/schedules.md). Setting, deleting,
// pausing and resuming a schedule change what the namespace publishes from now on: they take the
// manage permission; a trigger publishes one job, as a publish does.
func (a *API) scheduleRoutes() []httpapi.Route {
	const s = "/v1/ns/{ns}/schedules"
	anyPerm := []tenant.Permission{tenant.PermPublish, tenant.PermConsume, tenant.PermManage}
	manage := []tenant.Permission{tenant.PermManage}
	return []httpapi.Route{
		{Pattern: "GET " + s, Handler: a.listSchedules, Perms: anyPerm},
		{Pattern: "PUT " + s + "/{name}", Handler: a.setSchedule, Perms: manage, Limit: tenant.LimitWrite},
		{Pattern: "GET " + s + "/{name}", Handler: a.getSchedule, Perms: anyPerm},
		{Pattern: "DELETE " + s + "/{name}", Handler: a.deleteSchedule, Perms: manage},
		{Pattern: "POST " + s + "/{name}/pause", Handler: a.pauseSchedule, Perms: manage},
		{Pattern: "POST " + s + "/{name}/resume", Handler: a.resumeSchedule, Perms: manage},
		{Pattern: "POST " + s + "/{name}/trigger", Handler: a.triggerSchedule,
			Perms: []tenant.Permission{tenant.PermPublish, tenant.PermManage}, Limit: tenant.LimitWrite},
	}
}

// scheduleRequest is the body of PUT /v1/ns/{ns}/schedules/{name}. Times are RFC 3339, durations
// seconds.
type scheduleRequest struct {
	Cron     string       `json:"cron"`
	Every    *float64     `json:"every"`
	Timezone string       `json:"timezone"`
	Job      *scheduleJob `json:"job"`
	CatchUp  string       `json:"catch_up"`
	Jitter   *float64     `json:"jitter"`
	StartAt  *string      `json:"start_at"`
	EndAt    *string      `json:"end_at"`
	Paused   bool         `json:"paused"`
}

// scheduleJob is the job of each tick: a publish's job with its queue, without delay or run_at
// (the tick says when).
type scheduleJob struct {
	Queue string `json:"queue"`
	publishJob
}

// TriggerJSON is the answer to a trigger.
type TriggerJSON struct {
	JobID     string `json:"job_id,omitempty"`
	Duplicate bool   `json:"duplicate"`
}

// params validates the request into the engine's parameters; the engine checks the rest (cron,
// timezone, every, catch_up, the job as a publish would) and names the field.
func (req *scheduleRequest) params(tok tenant.Token, ns, name string) (queue.ScheduleParams, error) {
	p := queue.ScheduleParams{Namespace: ns, Name: name, Cron: req.Cron, Timezone: req.Timezone,
		CatchUp: queue.CatchUp(req.CatchUp), Paused: req.Paused}
	var err error
	if req.Every != nil {
		if p.Every, err = httpapi.Seconds("every", req.Every); err != nil {
			return p, err
		}
		if p.Every == 0 {
			return p, httpapi.InvalidArg("every", "must be at least 1 second")
		}
	}
	if p.Jitter, err = httpapi.Seconds("jitter", req.Jitter); err != nil {
		return p, err
	}
	if p.StartAt, err = rfc3339("start_at", req.StartAt); err != nil {
		return p, err
	}
	if p.EndAt, err = rfc3339("end_at", req.EndAt); err != nil {
		return p, err
	}
	if req.Job == nil {
		return p, httpapi.InvalidArg("job", "give the job each tick publishes: {\"queue\": ..., \"payload\": ...}")
	}
	j := req.Job
	for field, given := range map[string]bool{"job.delay": j.Delay != nil, "job.run_at": j.RunAt != nil} {
		if given {
			return p, httpapi.InvalidArg(field, "a schedule's ticks say when its jobs run: use jitter to spread them")
		}
	}
	pp, err := j.params(tok, ns, j.Queue, "job")
	if err != nil {
		return p, err
	}
	p.Job = queue.JobTemplate{Queue: j.Queue, Payload: pp.Payload, Priority: pp.Priority, Tries: pp.Tries,
		TTL: pp.TTL, TTR: pp.TTR, Backoff: pp.Backoff, UniqueKey: pp.UniqueKey, UniqueFor: pp.UniqueFor,
		Attributes: pp.Attributes, Callback: pp.Callback}
	return p, nil
}

func rfc3339(field string, s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil || t.UnixMilli() <= 0 {
		return time.Time{}, httpapi.InvalidArg(field, "%q is not an RFC 3339 time after 1970 (2026-01-02T15:04:05Z)", *s)
	}
	return t, nil
}

// ScheduleBody renders a schedule as the API shows it (docs/openapi.yaml, Schedule): a map, so
// that the fields a schedule does not use (cron or every, its bounds) are left out.
func ScheduleBody(s queue.Schedule) map[string]any {
	body := map[string]any{
		"name": s.Name, "namespace": s.Namespace, "timezone": s.Timezone, "job": scheduleJobBody(s.Job),
		"catch_up": string(s.CatchUp), "paused": s.Paused, "next_run": timePtr(s.NextRun),
		"last_run": timePtr(s.LastRun), "missed": s.Missed, "fires": s.Fires, "version": s.Version,
	}
	optional := map[string]any{
		"cron": s.Cron, "every": secondsOf(s.Every), "jitter": secondsOf(s.Jitter), "start_at": timePtr(s.StartAt),
		"end_at": timePtr(s.EndAt), "last_job_id": s.LastJobID, "created_at": timePtr(s.CreatedAt),
		"updated_at": timePtr(s.UpdatedAt),
	}
	for k, v := range optional {
		if v != "" && v != 0.0 && v != (*time.Time)(nil) {
			body[k] = v
		}
	}
	return body
}

// scheduleJobBody renders a schedule's job template, its payload as a publish's job shows it.
func scheduleJobBody(j queue.JobTemplate) map[string]any {
	pl := encodePayload(j.Payload, j.Attributes)
	body := map[string]any{"queue": j.Queue, "priority": j.Priority}
	if pl.Base64 != nil {
		body["payload_base64"] = *pl.Base64
	} else {
		body["payload"] = pl.JSON
	}
	optional := map[string]any{
		"tries": float64(j.Tries), "ttl": secondsOf(j.TTL), "ttr": secondsOf(j.TTR), "unique_for": secondsOf(j.UniqueFor),
	}
	for k, v := range optional {
		if v != 0.0 {
			body[k] = v
		}
	}
	if j.UniqueKey != "" {
		body["unique_key"] = j.UniqueKey
	}
	if a := httpapi.PublicAttributes(j.Attributes); len(a) > 0 {
		body["attributes"] = a
	}
	if j.Backoff != (queue.Backoff{}) {
		body["backoff"] = BackoffJSON{Base: secondsOf(j.Backoff.Base), Max: secondsOf(j.Backoff.Max)}
	}
	if c := j.Callback; c != nil {
		timeout := secondsOf(c.Timeout)
		body["callback"] = CallbackJSON{URL: c.URL, Method: c.Method, Headers: c.Header, Timeout: &timeout}
	}
	return body
}

// setSchedule is PUT /v1/ns/{ns}/schedules/{name}: 200 with the schedule, created or replaced.
func (a *API) setSchedule(w http.ResponseWriter, r *http.Request) error {
	tok, _ := tenant.FromContext(r.Context())
	var req scheduleRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	ns := r.PathValue("ns")
	p, err := req.params(tok, ns, r.PathValue("name"))
	if err != nil {
		return err
	}
	check := queue.PublishParams{Namespace: ns, Queue: p.Job.Queue, Callback: p.Job.Callback}
	if err := a.checkCallbacks(r.Context(), ns, []queue.PublishParams{check}, false); err != nil {
		return prefixField("job", err)
	}
	s, err := a.queue.Schedules().Set(r.Context(), p)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, ScheduleBody(s))
	return nil
}

// prefixField moves a refused job field under the schedule's job ("callback.url" ->
// "job.callback.url").
func prefixField(prefix string, err error) error {
	if e := (*httpapi.Error)(nil); errors.As(err, &e) && e.Field != "" {
		e.Field = prefix + "." + e.Field
	}
	return err
}

// getSchedule is GET /v1/ns/{ns}/schedules/{name}.
func (a *API) getSchedule(w http.ResponseWriter, r *http.Request) error {
	return a.answerSchedule(w, r, a.queue.Schedules().Get)
}

// listSchedules is GET /v1/ns/{ns}/schedules?after=&limit=: a page in name order; next_after names
// the last one when more may follow.
func (a *API) listSchedules(w http.ResponseWriter, r *http.Request) error {
	p := queue.ListSchedulesParams{After: r.URL.Query().Get("after")}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > queue.MaxListSchedules {
			return httpapi.InvalidArg("limit", "%q is not a number in 1..%d", v, queue.MaxListSchedules)
		}
		p.Limit = n
	}
	list, err := a.queue.Schedules().List(r.Context(), r.PathValue("ns"), p)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(list))
	for i, s := range list {
		out[i] = ScheduleBody(s)
	}
	body := map[string]any{"schedules": out}
	if len(list) > 0 && len(list) == cmp.Or(p.Limit, 100) {
		body["next_after"] = list[len(list)-1].Name
	}
	httpapi.WriteJSON(w, http.StatusOK, body)
	return nil
}

// deleteSchedule is DELETE /v1/ns/{ns}/schedules/{name}: 204.
func (a *API) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	if err := a.queue.Schedules().Delete(r.Context(), r.PathValue("ns"), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pauseSchedule is POST /v1/ns/{ns}/schedules/{name}/pause: 200 with the schedule.
func (a *API) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	return a.answerSchedule(w, r, a.queue.Schedules().Pause)
}

// resumeSchedule is POST /v1/ns/{ns}/schedules/{name}/resume: 200 with the schedule.
func (a *API) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	return a.answerSchedule(w, r, a.queue.Schedules().Resume)
}

// answerSchedule answers 200 with the schedule that call returns for the request's namespace and
// name.
func (a *API) answerSchedule(w http.ResponseWriter, r *http.Request,
	call func(ctx context.Context, ns, name string) (queue.Schedule, error)) error {
	s, err := call(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, ScheduleBody(s))
	return nil
}

// triggerSchedule is POST /v1/ns/{ns}/schedules/{name}/trigger: 201 with the job published now.
func (a *API) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	res, err := a.queue.Schedules().Trigger(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, TriggerJSON{JobID: res.JobID, Duplicate: res.Duplicate})
	return nil
}
