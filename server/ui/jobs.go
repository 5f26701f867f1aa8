package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// tabPageSize is how many jobs a queue page's tab lists at once.
const tabPageSize = 20

// stateTab is one tab of the queue page: a state, its count and its link.
type stateTab struct {
	State   queue.ListState
	Label   string
	Count   string
	Live    string // the live key that keeps Count fresh ("" for the delayed split)
	Href    string
	Current bool
}

var tabLabels = map[queue.ListState]string{
	queue.ListScheduled: "Scheduled", queue.ListReady: "Ready", queue.ListLeased: "Leased",
	queue.ListRetrying: "Retrying", queue.ListDead: "Dead", queue.ListDone: "Done",
}

// tabData reads the queue page's tabs (the live figures l give their counts) and the page of jobs
// of the tab the query names (?state=, default ready; ?cursor= pages).
func (u *UI) tabData(r *http.Request, ns, q string, l live) (map[string]any, error) {
	state := queue.ListState(r.URL.Query().Get("state"))
	if state == "" {
		state = queue.ListReady
	}
	if _, ok := tabLabels[state]; !ok {
		return nil, httpapi.InvalidArg("state", "%q is not one of scheduled, ready, leased, retrying, dead, done", state)
	}
	cursor := r.URL.Query().Get("cursor")
	page, err := u.cfg.Queue.ListJobs(r.Context(), queue.ListJobsParams{Namespace: ns, Queue: q, State: state, Limit: tabPageSize, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	split, err := u.cfg.Queue.SplitDelayed(r.Context(), ns, q)
	if err != nil {
		return nil, err
	}
	key := ns + "/" + q
	splitCount := func(n int64) string {
		if split.Exact {
			return strconv.FormatInt(n, 10)
		}
		return "≥" + strconv.FormatInt(n, 10)
	}
	tabs := make([]stateTab, 0, len(queue.ListStates))
	for _, s := range queue.ListStates {
		t := stateTab{State: s, Label: tabLabels[s], Href: queuePath(ns, q) + "?state=" + string(s), Current: s == state}
		switch s {
		case queue.ListScheduled:
			t.Count = splitCount(split.Scheduled)
		case queue.ListRetrying:
			t.Count = splitCount(split.Retrying)
		default:
			t.Live = key + ":" + string(s)
			t.Count = l[t.Live]
		}
		tabs = append(tabs, t)
	}
	return map[string]any{
		"Tabs": tabs, "State": string(state), "Jobs": page.Jobs, "Next": page.NextCursor, "First": cursor == "",
		"Total": page.Total, "Actions": tabActions[state],
	}, nil
}

// jobAction is an action on selected jobs: its form value, its button's words and what the
// confirmation asks.
type jobAction struct {
	Name, Button, Verb string
	Danger, Leases     bool // Leases: it names deliveries (leased jobs), not only ids
	Priority           bool // it takes a new priority
}

var (
	actDelete   = jobAction{Name: "delete", Button: "Delete", Verb: "delete", Danger: true}
	actRunNow   = jobAction{Name: "run_now", Button: "Run now", Verb: "make ready now"}
	actRespawn  = jobAction{Name: "respawn", Button: "Respawn", Verb: "respawn (ready again, all tries back)"}
	actPriority = jobAction{Name: "priority", Button: "Set priority", Verb: "give a new priority to", Priority: true}
	actAck      = jobAction{Name: "ack", Button: "Ack lease", Verb: "ack (finish, as its consumer would)", Leases: true}
	actRelease  = jobAction{Name: "release", Button: "Cancel lease", Verb: "take back from their consumer (ready again, the try returned)", Leases: true}
)

// jobActions are the actions by form value.
var jobActions = func() map[string]jobAction {
	m := map[string]jobAction{}
	for _, a := range []jobAction{actDelete, actRunNow, actRespawn, actPriority, actAck, actRelease} {
		m[a.Name] = a
	}
	return m
}()

// actionNotes are the banners of the actions.
var actionNotes = map[string]note{
	actDelete.Name: noteJobsDeleted, actRunNow.Name: noteRunNow, actRespawn.Name: noteRespawned,
	actPriority.Name: notePriority, actAck.Name: noteAcked, actRelease.Name: noteReleased,
}

// tabActions are the actions each tab offers on its selected jobs.
var tabActions = map[queue.ListState][]jobAction{
	queue.ListScheduled: {actRunNow, actPriority, actDelete},
	queue.ListRetrying:  {actRunNow, actPriority, actDelete},
	queue.ListReady:     {actPriority, actDelete},
	queue.ListLeased:    {actAck, actRelease, actDelete},
	queue.ListDead:      {actRespawn, actPriority, actDelete},
	queue.ListDone:      {actDelete},
}

// stateActions are the actions a job's page offers, by the job's state (delayed jobs are
// scheduled or retrying alike).
var stateActions = map[queue.State][]jobAction{
	queue.StateDelayed: tabActions[queue.ListScheduled],
	queue.StateReady:   tabActions[queue.ListReady],
	queue.StateLeased:  tabActions[queue.ListLeased],
	queue.StateDead:    tabActions[queue.ListDead],
	queue.StateDone:    tabActions[queue.ListDone],
}

// selection is what an action form names: the ids, the leases (id and delivery) of leased jobs,
// the new priority, and where to go back to.
type selection struct {
	Action   jobAction
	IDs      []string // every job named, PlainIDs and the leases' alike
	PlainIDs []string
	Leases   []queue.AckParams
	Priority int
	From     string // a tab's state, or "job"
}

// readSelection reads and checks an action form.
func readSelection(r *http.Request, ns, q string) (selection, error) {
	if err := r.ParseForm(); err != nil {
		return selection{}, httpapi.InvalidArg("form", "%v", err)
	}
	f := r.PostForm
	act, ok := jobActions[f.Get("action")]
	if !ok {
		return selection{}, httpapi.InvalidArg("action", "choose one of the buttons")
	}
	sel := selection{Action: act, From: f.Get("from")}
	if _, ok := tabLabels[queue.ListState(sel.From)]; !ok && sel.From != "job" {
		sel.From = ""
	}
	sel.PlainIDs = f["id"]
	sel.IDs = append(sel.IDs, f["id"]...)
	for _, l := range f["lease"] {
		id, d, ok := strings.Cut(l, ":")
		n, err := strconv.Atoi(d)
		if !ok || err != nil || n < 1 {
			return selection{}, httpapi.InvalidArg("lease", "%q is not a job id and delivery number", l)
		}
		sel.Leases = append(sel.Leases, queue.AckParams{Namespace: ns, Queue: q, ID: id, Delivery: n})
		sel.IDs = append(sel.IDs, id)
	}
	switch {
	case len(sel.IDs) == 0:
		return selection{}, httpapi.InvalidArg("id", "select at least one job")
	case len(sel.IDs) > queue.MaxSelection:
		return selection{}, httpapi.InvalidArg("id", "at most %d jobs at once", queue.MaxSelection)
	case act.Leases && len(sel.Leases) != len(sel.IDs):
		return selection{}, httpapi.InvalidArg("lease", "%s acts on leased jobs only: select them on the Leased tab", act.Button)
	}
	if act.Priority {
		p, err := strconv.Atoi(strings.TrimSpace(f.Get("priority")))
		if err != nil || p < 0 || p > queue.MaxPriority {
			return selection{}, httpapi.InvalidArg("priority", "a whole number in 0..%d", queue.MaxPriority)
		}
		sel.Priority = p
	}
	return sel, nil
}

// jobsAction runs an action on selected jobs of the queue named by the path, after a confirmation
// page: a form without confirm=yes gets that page, which repeats the selection with confirm=yes.
// Ids are looked up in this queue only, so a form cannot reach another queue's (or namespace's)
// jobs.
func (u *UI) jobsAction(w http.ResponseWriter, r *http.Request) error {
	ns, q, err := u.queueRef(r)
	if err != nil {
		return err
	}
	sel, err := readSelection(r, ns, q)
	if err != nil {
		return err
	}
	back := queuePath(ns, q)
	if sel.From == "job" && len(sel.IDs) == 1 && sel.Action != actDelete {
		back = jobPath(ns, q, sel.IDs[0])
	} else if sel.From != "" && sel.From != "job" {
		back += "?state=" + sel.From
	}
	if u.confirmFirst(w, r, sel.confirmation(ns, q, back)) {
		return nil
	}
	n, err := u.runAction(r, ns, q, sel)
	if err != nil {
		return err
	}
	return done(w, r, back, actionNotes[sel.Action.Name], int64(n))
}

// confirmation is the page that asks before the selection's action runs.
func (sel selection) confirmation(ns, q, back string) confirmation {
	what := "jobs"
	if len(sel.IDs) == 1 {
		what = "job"
	}
	question := fmt.Sprintf("%s: %s %d %s of %s", sel.Action.Button, sel.Action.Verb, len(sel.IDs), what, q)
	if sel.Action.Priority {
		question += fmt.Sprintf(", new priority %d", sel.Priority)
	}
	return confirmation{
		Crumbs:   []crumb{{"Queues", "/ui/"}, {Text: ns}, {q, queuePath(ns, q)}},
		Question: question + "?", Items: sel.IDs, Button: sel.Action.Button, Danger: sel.Action.Danger, Back: back,
	}
}

// runAction does the confirmed action and returns on how many jobs it acted.
func (u *UI) runAction(r *http.Request, ns, q string, sel selection) (int, error) {
	ctx := r.Context()
	switch sel.Action {
	case actDelete:
		return u.cfg.Queue.Delete(ctx, ns, q, sel.IDs...)
	case actRunNow:
		moved, err := u.cfg.Queue.RunNow(ctx, ns, q, sel.IDs...)
		return len(moved), err
	case actRespawn:
		moved, err := u.cfg.Queue.DeadRespawn(ctx, queue.DeadRespawnParams{Namespace: ns, Queue: q, IDs: sel.IDs})
		return len(moved), err
	case actPriority:
		changed, err := u.cfg.Queue.SetPriority(ctx, ns, q, sel.Priority, sel.IDs...)
		return len(changed), err
	case actAck:
		errs, err := u.cfg.Queue.AckMany(ctx, sel.Leases)
		return countNil(errs), err
	default: // actRelease
		n := 0
		for _, l := range sel.Leases {
			err := u.cfg.Queue.Release(ctx, queue.ReleaseParams{Namespace: ns, Queue: q, ID: l.ID, Delivery: l.Delivery})
			switch {
			case err == nil:
				n++
			case !errors.Is(err, queue.ErrLeaseLost) && !errors.Is(err, queue.ErrNotFound):
				return n, err
			}
		}
		return n, nil
	}
}

func countNil(errs []error) int {
	n := 0
	for _, e := range errs {
		if e == nil {
			n++
		}
	}
	return n
}

// findJob sends the look-up form to the job's page: by id, or by the unique key a pending job
// holds.
func (u *UI) findJob(w http.ResponseWriter, r *http.Request, ns, q, id, unique string) error {
	if id == "" {
		j, err := u.cfg.Queue.GetByUniqueKey(r.Context(), ns, q, unique)
		if err != nil {
			return err
		}
		id = j.ID
	}
	http.Redirect(w, r, jobPath(ns, q, id), http.StatusSeeOther) //nolint:gosec // a path under /ui/, its parts escaped
	return nil
}
