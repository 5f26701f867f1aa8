package jobs

import (
	"cmp"
	"encoding/json"
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

// ScheduleJSON is a schedule as the API shows it.
type ScheduleJSON struct {
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Cron      string          `json:"cron,omitempty"`
	Every     float64         `json:"every,omitempty"`
	Timezone  string          `json:"timezone"`
	Job       ScheduleJobJSON `json:"job"`
	CatchUp   string          `json:"catch_up"`
	Jitter    float64         `json:"jitter,omitempty"`
	StartAt   *time.Time      `json:"start_at,omitempty"`
	EndAt     *time.Time      `json:"end_at,omitempty"`
	Paused    bool            `json:"paused"`
	NextRun   *time.Time      `json:"next_run"`
	LastRun   *time.Time      `json:"last_run"`
	LastJobID string          `json:"last_job_id,omitempty"`
	Missed    int64           `json:"missed"`
	Fires     int64           `json:"fires"`
	Version   int64           `json:"version"`
	CreatedAt *time.Time      `json:"created_at,omitempty"`
	UpdatedAt *time.Time      `json:"updated_at,omitempty"`
}

// ScheduleJobJSON is a schedule's job template.
type ScheduleJobJSON struct {
	Queue         string            `json:"queue"`
	Payload       json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64 *string           `json:"payload_base64,omitempty"`
	Priority      int               `json:"priority"`
	Tries         int               `json:"tries,omitempty"`
	TTL           float64           `json:"ttl,omitempty"`
	TTR           float64           `json:"ttr,omitempty"`
	Backoff       *BackoffJSON      `json:"backoff,omitempty"`
	UniqueKey     string            `json:"unique_key,omitempty"`
	UniqueFor     float64           `json:"unique_for,omitempty"`
	Attributes    map[string]string `json:"attributes,omitempty"`
	Callback      *CallbackJSON     `json:"callback,omitempty"`
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
	if j.Delay != nil || j.RunAt != nil {
		return p, httpapi.InvalidArg("job.delay", "a schedule's ticks say when its jobs run: use jitter to spread them")
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

// ToScheduleJSON renders a schedule (also for the dashboard).
func ToScheduleJSON(s queue.Schedule) ScheduleJSON {
	j := s.Job
	pl := encodePayload(j.Payload, j.Attributes)
	out := ScheduleJSON{
		Name: s.Name, Namespace: s.Namespace, Cron: s.Cron, Every: secondsOf(s.Every), Timezone: s.Timezone,
		CatchUp: string(s.CatchUp), Jitter: secondsOf(s.Jitter), StartAt: timePtr(s.StartAt), EndAt: timePtr(s.EndAt),
		Paused: s.Paused, NextRun: timePtr(s.NextRun), LastRun: timePtr(s.LastRun), LastJobID: s.LastJobID,
		Missed: s.Missed, Fires: s.Fires, Version: s.Version, CreatedAt: timePtr(s.CreatedAt), UpdatedAt: timePtr(s.UpdatedAt),
		Job: ScheduleJobJSON{
			Queue: j.Queue, Payload: pl.JSON, PayloadBase64: pl.Base64, Priority: j.Priority, Tries: j.Tries,
			TTL: secondsOf(j.TTL), TTR: secondsOf(j.TTR), UniqueKey: j.UniqueKey, UniqueFor: secondsOf(j.UniqueFor),
			Attributes: httpapi.PublicAttributes(j.Attributes),
		},
	}
	if j.Backoff != (queue.Backoff{}) {
		out.Job.Backoff = &BackoffJSON{Base: secondsOf(j.Backoff.Base), Max: secondsOf(j.Backoff.Max)}
	}
	if c := j.Callback; c != nil {
		timeout := secondsOf(c.Timeout)
		out.Job.Callback = &CallbackJSON{URL: c.URL, Method: c.Method, Headers: c.Header, Timeout: &timeout}
	}
	return out
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
	httpapi.WriteJSON(w, http.StatusOK, ToScheduleJSON(s))
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
	s, err := a.queue.Schedules().Get(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, ToScheduleJSON(s))
	return nil
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
	out := make([]ScheduleJSON, len(list))
	for i, s := range list {
		out[i] = ToScheduleJSON(s)
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
	s, err := a.queue.Schedules().Pause(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, ToScheduleJSON(s))
	return nil
}

// resumeSchedule is POST /v1/ns/{ns}/schedules/{name}/resume: 200 with the schedule.
func (a *API) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	s, err := a.queue.Schedules().Resume(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, ToScheduleJSON(s))
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
