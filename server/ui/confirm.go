package ui

import (
	"net/http"
	"slices"
)

// confirmation is the page an action shows before it runs: the question, what it acts on, and
// a form that sends the action's own fields again with confirm=yes. Every action that changes more
// than a setting goes through it (a selection, a whole list, a revocation), so a stray click, or
// a form posted by a page that bypasses the script, changes nothing without a second, deliberate
// one; the server decides, not a browser dialog.
type confirmation struct {
	Crumbs   []crumb
	Question string
	Items    []string // what the action acts on, listed under the question
	Button   string   // the action's name on the confirming button: "Yes, <Button>"
	Danger   bool     // it cannot be undone
	Back     string   // where Cancel goes
	// Action and Fields are filled by confirmFirst: the form's target and the fields it repeats.
	Action string
	Fields []formField
}

// crumb is one step of a page's breadcrumbs; the last has no link.
type crumb struct{ Text, Href string }

type formField struct{ Name, Value string }

// confirmFirst answers the confirmation page c and returns true unless the request's form says
// confirm=yes; the page's form repeats every field of the request's form (but its CSRF token,
// which the page writes anew) to the same path.
func (u *UI) confirmFirst(w http.ResponseWriter, r *http.Request, c confirmation) bool {
	if r.PostFormValue("confirm") == "yes" {
		return false
	}
	c.Action = r.URL.EscapedPath()
	names := make([]string, 0, len(r.PostForm))
	for name := range r.PostForm {
		if name != "csrf" && name != "confirm" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		for _, v := range r.PostForm[name] {
			c.Fields = append(c.Fields, formField{name, v})
		}
	}
	u.render(w, r, http.StatusOK, "confirm", "Confirm", map[string]any{"Confirm": c}) // the layout reads Data as a map
	return true
}
