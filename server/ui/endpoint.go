package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

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
	list := relay.TaskList(r.URL.Query().Get("list"))
	if list == "" {
		list = relay.ListPending
	}
	if _, ok := taskTabLabels[list]; !ok {
		return httpapi.InvalidArg("list", "%q is not one of pending, retrying, running", list)
	}
	offset := 0
	if v := r.URL.Query().Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return httpapi.InvalidArg("offset", "a whole number of tasks to skip, 0 or more")
		}
	}
	l := live{}
	if err := u.endpointLive(r.Context(), l, name); err != nil {
		return err
	}
	page, err := u.cfg.Relay.ListTasks(r.Context(), relay.ListTasksParams{Endpoint: name, List: list, Offset: offset, Limit: taskPageSize})
	if err != nil {
		return relayErr(err)
	}
	path := endpointPath(name)
	tabs := make([]taskTab, 0, len(relay.TaskLists))
	for _, tl := range relay.TaskLists {
		k := "ep/" + name + ":" + taskTabLive[tl]
		tabs = append(tabs, taskTab{List: tl, Label: taskTabLabels[tl], Live: k, Count: l[k], Href: path + "?list=" + string(tl), Current: tl == list})
	}
	u.render(w, r, http.StatusOK, "endpoint", "Endpoint "+name, map[string]any{
		"Endpoint": ep, "Key": "ep/" + name, "Live": l, "Path": path, "Poll": "/ui/api/endpoints/" + url.PathEscape(name),
		"Tabs": tabs, "List": string(list), "Tasks": page.Tasks, "Total": page.Total, "Offset": offset, "Next": page.Next,
	})
	return nil
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
