package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// The overview and the namespace pages read a page at a time, so they cost the same with 100,000
// queues and 10,000 tokens as with ten: the overview a page of namespaces with the first queues of
// each, a namespace's page a page of its queues.
const (
	overviewNamespaces = 10  // namespaces on a page of the overview
	overviewQueues     = 20  // queues shown per namespace on the overview
	namespaceQueues    = 100 // queues on a page of a namespace's page
)

// namespacesPage is a page of the overview's namespaces: first the registered ones (tenancy's
// registry), then those that only have queues (a library user's), and the position of the next
// page ("" at the end). A position is "t:<HSCAN cursor>" or "q:<SSCAN cursor>".
func (u *UI) namespacesPage(ctx context.Context, after string) ([]string, string, error) {
	phase, pos, _ := strings.Cut(after, ":")
	if after == "" {
		phase = "t"
	}
	switch phase {
	case "t":
		list, next, err := u.cfg.Namespaces.Page(ctx, pos, overviewNamespaces)
		if err != nil {
			return nil, "", err
		}
		names := make([]string, len(list))
		for i, n := range list {
			names[i] = n.Name
		}
		if next == "" {
			return names, "q:", nil
		}
		return names, "t:" + next, nil
	case "q":
		page, err := u.cfg.Queue.NamespacesPage(ctx, queue.QueuesPageParams{After: pos, Limit: overviewNamespaces})
		if err != nil {
			return nil, "", err
		}
		known, err := u.cfg.Namespaces.Registered(ctx, page.Queues)
		if err != nil {
			return nil, "", err
		}
		var names []string
		for _, ns := range page.Queues {
			if !known[ns] {
				names = append(names, ns)
			}
		}
		if page.Next == "" {
			return names, "", nil
		}
		return names, "q:" + page.Next, nil
	default:
		return nil, "", httpapi.InvalidArg("cursor", "not a position in the overview")
	}
}

// queueBlock reads a page of namespace ns's queues (after, at most limit) with their numbers into
// l, and the position of the next page.
func (u *UI) queueBlock(ctx context.Context, l live, ns, after string, limit int) (nsBlock, string, error) {
	b := nsBlock{Name: ns}
	page, err := u.cfg.Queue.QueuesPage(ctx, queue.QueuesPageParams{Namespace: ns, After: after, Limit: limit})
	if err != nil {
		return b, "", err
	}
	if b.Total, err = u.cfg.Queue.QueueCount(ctx, ns); err != nil {
		return b, "", err
	}
	names := page.Queues
	addLayout(l, ns, names)
	if len(names) == 0 {
		return b, page.Next, nil
	}
	stats, err := u.cfg.Queue.StatsMany(ctx, ns, names)
	if err != nil {
		return b, "", err
	}
	tp, err := u.throughput(ctx, hourSpan, ns, names, stats)
	if err != nil {
		return b, "", err
	}
	for i, q := range names {
		key := ns + "/" + q
		b.Queues = append(b.Queues, queueRow{Namespace: ns, Queue: q, Key: key})
		statsLive(l, key, stats[i])
		seriesLive(l, key, tp[i])
	}
	return b, page.Next, nil
}

// layoutKey is the live key naming the namespaces and queues a page lists: when a poll returns
// another list (a queue was created or deleted), the page's script reloads the list in place.
const layoutKey = "layout"

// addLayout adds namespace ns and its queues names to l's layout.
func addLayout(l live, ns string, names []string) {
	l[layoutKey] += "ns:" + ns + " " + strings.Join(names, " ") + "\n"
}

// pageLink is the link to the next page of path ("" when there is none): the cursor of listing
// kind in scope after pos.
func pageLink(path, kind, scope, pos string) string {
	if pos == "" {
		return ""
	}
	return path + "?cursor=" + url.QueryEscape(httpapi.EncodeCursor(kind, scope, pos))
}

// namespaceData is a page of namespace ns's queues (GET /ui/ns/{ns}?cursor=) with the link to the
// next page.
func (u *UI) namespaceData(r *http.Request) (nsBlock, live, string, error) {
	ns := r.PathValue("ns")
	pr, err := httpapi.ReadPage(r, "ui-queues", ns)
	if err != nil {
		return nsBlock{}, nil, "", err
	}
	l := live{}
	b, next, err := u.queueBlock(r.Context(), l, ns, pr.After, namespaceQueues)
	if err != nil {
		return nsBlock{}, nil, "", err
	}
	return b, l, pageLink("/ui/ns/"+ns, "ui-queues", ns, next), nil
}

func (u *UI) namespacePage(w http.ResponseWriter, r *http.Request) error {
	b, l, next, err := u.namespaceData(r)
	if err != nil {
		return err
	}
	tokens, err := u.cfg.Tokens.Count(r.Context(), b.Name)
	if err != nil {
		return err
	}
	schedules, err := u.cfg.Queue.Schedules().Count(r.Context(), b.Name)
	if err != nil {
		return err
	}
	var quotas *tenant.Quotas
	if u.cfg.Quotas != nil {
		q, err := u.cfg.Quotas.Of(r.Context(), b.Name)
		if err != nil {
			return err
		}
		quotas = &q
	}
	stored, err := u.cfg.Queue.Usage(r.Context(), b.Name)
	if err != nil {
		return err
	}
	var deleting *tenant.Deletion
	if u.cfg.Deletions != nil {
		d, found, err := u.cfg.Deletions.Get(r.Context(), b.Name)
		if err != nil {
			return err
		}
		if found {
			deleting = &d
		}
	}
	u.render(w, r, http.StatusOK, "namespace", "Namespace "+b.Name, map[string]any{
		"NS": b, "Live": l, "Poll": pollURL(r, "/ui/api/ns/"+b.Name), "Next": next, "Tokens": tokens, "Schedules": schedules, "Quotas": quotas, "Stored": stored, "Deleting": deleting,
	})
	return nil
}

// pollURL is the JSON twin a page of r polls: path, with r's cursor and chart span (the same
// page's numbers).
func pollURL(r *http.Request, path string) string {
	q := url.Values{}
	for _, k := range []string{"cursor", "span"} {
		if v := r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// liveTwin serves the live numbers of a paged page as JSON: what data reads for the request.
func liveTwin[T any](data func(*http.Request) (T, live, string, error)) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, l, _, err := data(r)
		if err != nil {
			return err
		}
		return writeLive(w, l)
	}
}

// namespaceJSON is the namespace page's JSON twin.
func (u *UI) namespaceJSON(w http.ResponseWriter, r *http.Request) error {
	return liveTwin(u.namespaceData)(w, r)
}

// overviewJSON is the overview's JSON twin.
func (u *UI) overviewJSON(w http.ResponseWriter, r *http.Request) error {
	return liveTwin(u.overviewData)(w, r)
}
