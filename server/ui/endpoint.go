package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// taskPageSize is how many tasks an endpoint page lists at once.
const taskPageSize = 20

// taskTab is one list of an endpoint page: its label and the live figure that counts it.
type taskTab struct {
	List    relay.TaskList
	Label   string
	Live    string
	Count   string
	Href    string
	Current bool
}

var (
	taskTabLabels = map[relay.TaskList]string{relay.ListPending: "Pending", relay.ListRetrying: "Retrying", relay.ListRunning: "Running"}
	// taskTabLive names the live figure (endpointLive) that counts each list.
	taskTabLive = map[relay.TaskList]string{relay.ListPending: "queued", relay.ListRetrying: "retrying", relay.ListRunning: "running"}
)

func endpointPath(name string) string { return "/ui/endpoints/" + url.PathEscape(name) }

// endpointPage shows one endpoint: its live numbers and limits, and a page of its pending,
// retrying or running tasks (?list=, default pending; ?offset= pages) with their place, subject,
// priority and age, to cancel.
func (u *UI) endpointPage(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ep, err := u.cfg.Relay.Endpoint(r.Context(), name)
	if err != nil {
		return relayErr(err)
	}
	view, err := u.endpointTasks(r)
	if err != nil {
		return err
	}
	path := endpointPath(name)
	tabs := make([]taskTab, 0, len(relay.TaskLists))
	for _, tl := range relay.TaskLists {
		k := "ep/" + name + ":" + taskTabLive[tl]
		tabs = append(tabs, taskTab{List: tl, Label: taskTabLabels[tl], Live: k, Count: view.live[k], Href: path + "?list=" + string(tl), Current: tl == view.list})
	}
	poll := "/ui/api/endpoints/" + url.PathEscape(name) + "?" + url.Values{"list": {string(view.list)}, "offset": {strconv.Itoa(view.offset)}}.Encode()
	u.render(w, r, http.StatusOK, "endpoint", "Endpoint "+name, map[string]any{
		"Endpoint": ep, "Key": "ep/" + name, "Live": view.live, "Path": path, "Poll": poll,
		"Tabs": tabs, "List": string(view.list), "Tasks": view.page.Tasks, "Total": view.page.Total, "Offset": view.offset, "Next": view.page.Next,
	})
	return nil
}

// endpointView is what an endpoint page shows of its tasks: the endpoint's live numbers, the
// list and offset the address asks for, and that page of tasks.
type endpointView struct {
	live   live
	list   relay.TaskList
	offset int
	page   relay.TaskPage
}

// endpointTasks reads the live numbers of the endpoint named by {name} and the page of its tasks
// that ?list= and ?offset= ask for. The live numbers' layout names the tasks the page lists, in
// order, with their place and status: when a poll's layout differs (a task started, ended, came
// or moved), the page's script reads the list again and replaces it in place.
func (u *UI) endpointTasks(r *http.Request) (endpointView, error) {
	name := r.PathValue("name")
	v := endpointView{live: live{}, list: relay.TaskList(r.URL.Query().Get("list"))}
	if v.list == "" {
		v.list = relay.ListPending
	}
	if _, ok := taskTabLabels[v.list]; !ok {
		return v, httpapi.InvalidArg("list", "%q is not one of pending, retrying, running", v.list)
	}
	if o := r.URL.Query().Get("offset"); o != "" {
		var err error
		if v.offset, err = strconv.Atoi(o); err != nil || v.offset < 0 {
			return v, httpapi.InvalidArg("offset", "a whole number of tasks to skip, 0 or more")
		}
	}
	if err := u.endpointLive(r.Context(), v.live, name); err != nil {
		return v, err
	}
	page, err := u.cfg.Relay.ListTasks(r.Context(), relay.ListTasksParams{Endpoint: name, List: v.list, Offset: v.offset, Limit: taskPageSize})
	if err != nil {
		return v, relayErr(err)
	}
	v.page = page
	var b strings.Builder
	for _, t := range page.Tasks {
		fmt.Fprintf(&b, "%s%s %d %s\n", t.ID, t.Slot, t.Position, t.Status)
	}
	fmt.Fprintf(&b, "next %d", page.Next)
	v.live[layoutKey] = b.String()
	return v, nil
}

// endpointJSON is the endpoint page's JSON twin: its live numbers and the layout of its list.
func (u *UI) endpointJSON(w http.ResponseWriter, r *http.Request) error {
	v, err := u.endpointTasks(r)
	if err != nil {
		return err
	}
	return writeLive(w, v.live)
}

// cancelTasks cancels the tasks a form selects ("id" fields) on the endpoint the path names,
// after a confirmation page. The relay refuses ids of another endpoint's tasks, so a form cannot
// reach them through this path. "from" says where to go back: a list of the endpoint page, or
// "task" (the task's own page).
func (u *UI) cancelTasks(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if _, err := u.cfg.Relay.Endpoint(r.Context(), name); err != nil {
		return relayErr(err)
	}
	if err := r.ParseForm(); err != nil {
		return httpapi.InvalidArg("form", "%v", err)
	}
	ids := r.PostForm["id"]
	switch {
	case len(ids) == 0:
		return httpapi.InvalidArg("id", "select at least one task")
	case len(ids) > relay.MaxListTasks:
		return httpapi.InvalidArg("id", "at most %d tasks at once", relay.MaxListTasks)
	}
	path := endpointPath(name)
	back := path
	from := r.PostFormValue("from")
	if from == "task" && len(ids) == 1 {
		back = "/ui/tasks?id=" + url.QueryEscape(ids[0])
	} else if _, ok := taskTabLabels[relay.TaskList(from)]; ok {
		back += "?list=" + from
	}
	what := "tasks"
	if len(ids) == 1 {
		what = "task"
	}
	if u.confirmFirst(w, r, confirmation{
		Crumbs:   []crumb{{"Request queue", "/ui/endpoints"}, {name, path}},
		Question: fmt.Sprintf("Cancel %d %s of %s? A pending task never runs; a running call's answer is dropped; a permit stops working.", len(ids), what, name),
		Items:    ids, Button: "Cancel tasks", Danger: true, Back: back,
	}) {
		return nil
	}
	res, err := u.cfg.Relay.CancelTasks(r.Context(), name, ids)
	if err != nil {
		return relayErr(err)
	}
	n := 0
	for _, c := range res {
		if c.Cancelled {
			n++
		}
	}
	return done(w, r, back, noteTasksCancelled, int64(n))
}
