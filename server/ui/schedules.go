package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

var errNoSuchAction = &httpapi.Error{Code: httpapi.CodeNotFound, Message: "a schedule's actions are pause, resume, trigger and delete"}

// schedulesPage lists one namespace's schedules (?ns=, default the first namespace; a namespace
// session's own) with their
// next and last runs, in pages of queue.MaxListSchedules (?after=), each with its actions.
func (u *UI) schedulesPage(w http.ResponseWriter, r *http.Request) error {
	namespaces := []string{scopeOf(r.Context())} // a namespace session sees its own (inScope)
	if namespaces[0] == "" {
		var err error
		if namespaces, err = u.cfg.Queue.Namespaces(r.Context()); err != nil {
			return err
		}
		slices.Sort(namespaces)
	}
	ns := r.URL.Query().Get("ns")
	if ns == "" && len(namespaces) > 0 {
		ns = namespaces[0]
	}
	var list []queue.Schedule
	if ns != "" {
		var err error
		list, err = u.cfg.Queue.Schedules().List(r.Context(), ns, queue.ListSchedulesParams{
			After: r.URL.Query().Get("after"), Limit: queue.MaxListSchedules})
		if err != nil {
			return err
		}
	}
	next := ""
	if len(list) == queue.MaxListSchedules {
		next = list[len(list)-1].Name
	}
	u.render(w, r, http.StatusOK, "schedules", "Schedules", map[string]any{
		"NS": ns, "Namespaces": namespaces, "Schedules": list, "Next": next,
	})
	return nil
}

// scheduleQuestions are the confirmations of the schedule actions that have one (%s: the
// schedule's name): pause and resume act at once.
var scheduleQuestions = map[string]string{
	"trigger": "Publish the job of schedule %s now? Its next run stays as it is.",
	"delete":  "Delete schedule %s? The jobs it published stay.",
}

// scheduleAction pauses, resumes, triggers or deletes a schedule, then goes back to its
// namespace's list with the banner of what it did.
func (u *UI) scheduleAction(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	sched := u.cfg.Queue.Schedules()
	back := "/ui/schedules?" + url.Values{"ns": {ns}}.Encode()
	action := r.PathValue("action")
	if question, ok := scheduleQuestions[action]; ok {
		if _, err := sched.Get(r.Context(), ns, name); err != nil {
			return err
		}
		if u.confirmFirst(w, r, confirmation{
			Crumbs:   []crumb{{"Schedules", back}, {Text: name}},
			Question: fmt.Sprintf(question, name), Button: action, Danger: action == "delete", Back: back,
		}) {
			return nil
		}
	}
	var what note
	var err error
	switch action {
	case "pause":
		_, err = sched.Pause(r.Context(), ns, name)
		what = noteSchedulePaused
	case "resume":
		_, err = sched.Resume(r.Context(), ns, name)
		what = noteScheduleResumed
	case "trigger":
		_, err = sched.Trigger(r.Context(), ns, name)
		what = noteScheduleTriggered
	case "delete":
		err = sched.Delete(r.Context(), ns, name)
		what = noteScheduleDeleted
	default:
		return errNoSuchAction
	}
	if err != nil {
		return err
	}
	return done(w, r, back, what, 0)
}
