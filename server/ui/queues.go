package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// live is the numbers of a page by element key: rendered into the page and served as JSON by the
// page's /ui/api/ twin, which the page's script polls (so a refresh changes text, never layout).
// Keys ending in ":points" are the points of a chart's polyline.
type live map[string]string

func writeLive(w http.ResponseWriter, l live) error {
	httpapi.WriteJSON(w, http.StatusOK, l)
	return nil
}

// queueRow is one queue of the overview.
type queueRow struct {
	Namespace, Queue string
	Key              string // the live keys' stem
}

// nsBlock is a namespace with a page of its queues.
type nsBlock struct {
	Name   string
	Queues []queueRow
	// Total is how many queues the namespace has (the page shows Queues of them).
	Total int64
}

// More reports whether the namespace has queues the block does not show.
func (b nsBlock) More() bool { return b.Total > int64(len(b.Queues)) }

func statsLive(l live, key string, st queue.Stats) {
	l[key+":ready"] = strconv.FormatInt(st.Ready, 10)
	l[key+":delayed"] = strconv.FormatInt(st.Delayed, 10)
	l[key+":leased"] = strconv.FormatInt(st.Leased, 10)
	l[key+":dead"] = strconv.FormatInt(st.Dead, 10)
	l[key+":done"] = strconv.FormatInt(st.Done, 10)
	l[key+":published"] = strconv.FormatInt(st.Published, 10)
	l[key+":acked"] = strconv.FormatInt(st.Acked, 10)
	l[key+":paused"] = "running"
	l[key+":oldest"] = formatAge(st.OldestReady)
	if st.Paused {
		l[key+":paused"] = "paused"
	}
}

func seriesLive(l live, key string, s series) {
	top := int64(1)
	for i := range s.Published {
		top = max(top, s.Published[i], s.Acked[i])
	}
	l[key+":pub:points"] = points(s.Published, top)
	l[key+":ack:points"] = points(s.Acked, top)
	rate := func(v int64) string {
		if v < 0 {
			return "–/min"
		}
		return strconv.FormatInt(v, 10) + "/min"
	}
	l[key+":rate"] = rate(last(s.Acked))
	l[key+":pubrate"] = rate(last(s.Published))
	l[key+":failrate"] = failureRate(s)
	quantilesLive(l, key+":hour", s.Acks)
}

// overviewData collects a page of namespaces (?cursor=) with the first queues of each and their
// numbers, and the link to the next page ("" on the last).
func (u *UI) overviewData(r *http.Request) ([]nsBlock, live, string, error) {
	ctx := r.Context()
	pr, err := httpapi.ReadPage(r, "overview", "")
	if err != nil {
		return nil, nil, "", err
	}
	// A page holds up to overviewNamespaces namespaces: it reads on from the registry to the
	// queues-only namespaces, a few reads at most. A session limited to one namespace (scope.go)
	// sees that one only.
	var nss []string
	next := pr.After
	scoped := scopeOf(ctx) != ""
	if scoped {
		nss, next = []string{scopeOf(ctx)}, ""
	}
	for i := 0; i < 4 && !scoped; i++ {
		page, n, err := u.namespacesPage(ctx, next)
		if err != nil {
			return nil, nil, "", err
		}
		nss, next = append(nss, page...), n
		if next == "" || len(nss) >= overviewNamespaces {
			break
		}
	}
	l := live{}
	blocks := make([]nsBlock, 0, len(nss))
	for _, ns := range nss {
		b, _, err := u.queueBlock(ctx, l, ns, "", overviewQueues)
		if err != nil {
			return nil, nil, "", err
		}
		blocks = append(blocks, b)
	}
	return blocks, l, pageLink("/ui/", "overview", "", next), nil
}

func (u *UI) overview(w http.ResponseWriter, r *http.Request) error {
	blocks, l, next, err := u.overviewData(r)
	if err != nil {
		return err
	}
	u.render(w, r, http.StatusOK, "overview", "Overview", map[string]any{
		"Namespaces": blocks, "Live": l, "Poll": pollURL(r, "/ui/api/overview"), "Next": next, "PublicURL": u.publicURL(r),
	})
	return nil
}

func (u *UI) find(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ns, qn, id := strings.TrimSpace(q.Get("ns")), strings.TrimSpace(q.Get("q")), strings.TrimSpace(q.Get("id"))
	unique := q.Get("unique")
	if id == "" && unique == "" {
		return httpapi.InvalidArg("id", "enter a job id or a unique key")
	}
	if ns == "" || qn == "" {
		return httpapi.InvalidArg("queue", "a job is found by namespace, queue and id (or unique key)")
	}
	return u.findJob(w, r, ns, qn, id, unique)
}

func queuePath(ns, q string) string {
	return "/ui/ns/" + url.PathEscape(ns) + "/queues/" + url.PathEscape(q)
}

func jobPath(ns, q, id string) string { return queuePath(ns, q) + "/jobs/" + url.PathEscape(id) }

// queueRef reads and checks {ns} and {q}: a queue that does not exist is not_found (so that a
// typo does not show an empty page that looks real).
func (u *UI) queueRef(r *http.Request) (ns, q string, err error) {
	ns, q = r.PathValue("ns"), r.PathValue("q")
	ok, err := u.cfg.Queue.QueueExists(r.Context(), ns, q)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return "", "", &httpapi.Error{Code: httpapi.CodeNotFound, Message: fmt.Sprintf("no queue %q in namespace %q", q, ns)}
	}
	return ns, q, nil
}

// queueLive reads the live figures of the queue named by {ns} and {q} (see queueRef).
func (u *UI) queueLive(r *http.Request) (ns, q string, l live, err error) {
	if ns, q, err = u.queueRef(r); err != nil {
		return "", "", nil, err
	}
	st, err := u.cfg.Queue.Stats(r.Context(), ns, q)
	if err != nil {
		return "", "", nil, err
	}
	cur := []queue.Stats{st}
	tp, err := u.throughput(r.Context(), hourSpan, ns, []string{q}, cur)
	if err != nil {
		return "", "", nil, err
	}
	l = live{}
	key := ns + "/" + q
	statsLive(l, key, st)
	seriesLive(l, key, tp[0])
	if sp := spanOf(r); sp.Name != hourSpan.Name {
		if tp, err = u.throughput(r.Context(), sp, ns, []string{q}, cur); err != nil {
			return "", "", nil, err
		}
	}
	chartLive(l, key, tp[0], spanOf(r))
	timesLive(l, key, tp[0])
	return ns, q, l, nil
}

func (u *UI) queuePage(w http.ResponseWriter, r *http.Request) error {
	ns, q, l, err := u.queueLive(r)
	if err != nil {
		return err
	}
	data, err := u.tabData(r, ns, q, l)
	if err != nil {
		return err
	}
	for k, v := range map[string]any{
		"NS": ns, "Queue": q, "Key": ns + "/" + q, "Path": queuePath(ns, q), "Live": l,
		"Paused": l[ns+"/"+q+":paused"] == "paused",
		"Poll":   pollURL(r, "/ui/api/ns/"+url.PathEscape(ns)+"/queues/"+url.PathEscape(q)),
		"Span":   spanOf(r),
	} {
		data[k] = v
	}
	u.render(w, r, http.StatusOK, "queue", q+" · "+ns, data)
	return nil
}

func (u *UI) queueJSON(w http.ResponseWriter, r *http.Request) error {
	_, _, l, err := u.queueLive(r)
	if err != nil {
		return err
	}
	return writeLive(w, l)
}

func (u *UI) pause(w http.ResponseWriter, r *http.Request) error {
	return u.switchQueue(w, r, u.cfg.Queue.Pause, notePaused)
}

func (u *UI) resume(w http.ResponseWriter, r *http.Request) error {
	return u.switchQueue(w, r, u.cfg.Queue.Resume, noteResumed)
}

// switchQueue runs pause or resume (set) on the queue named by {ns} and {q} and reports it with
// the banner what.
func (u *UI) switchQueue(w http.ResponseWriter, r *http.Request, set func(ctx context.Context, ns, q string) error, what note) error {
	ns, q, err := u.queueRef(r)
	if err != nil {
		return err
	}
	if err := set(r.Context(), ns, q); err != nil {
		return err
	}
	return done(w, r, queuePath(ns, q), what, 0)
}

// purge empties the queue's ready and delayed jobs. The form must repeat the queue's name in
// "confirm": a stray click or a replayed form cannot purge.
func (u *UI) purge(w http.ResponseWriter, r *http.Request) error {
	ns, q, err := u.queueRef(r)
	if err != nil {
		return err
	}
	if r.PostFormValue("confirm") != q {
		return httpapi.InvalidArg("confirm", "type the queue's name (%s) to confirm the purge", q)
	}
	n, err := u.cfg.Queue.Purge(r.Context(), ns, q)
	if err != nil {
		return err
	}
	return done(w, r, queuePath(ns, q), notePurged, n)
}

func (u *UI) jobPage(w http.ResponseWriter, r *http.Request) error {
	ns, q, id := r.PathValue("ns"), r.PathValue("q"), r.PathValue("id")
	job, err := u.cfg.Queue.Get(r.Context(), ns, q, id)
	if err != nil {
		return err
	}
	attrs, _ := json.Marshal(job.Attributes)
	data := map[string]any{
		"Job": job, "Path": queuePath(ns, q), "Payload": preview(job.Payload), "Result": preview(job.Result),
		"Attributes": string(attrs),
	}
	if err := u.jobExtras(r.Context(), job, data); err != nil {
		return err
	}
	u.render(w, r, http.StatusOK, "job", "Job "+id, data)
	return nil
}

// deadPage is the dead letter's old address: the queue page's Dead tab now.
func (u *UI) deadPage(w http.ResponseWriter, r *http.Request) error {
	ns, q, err := u.queueRef(r)
	if err != nil {
		return err
	}
	http.Redirect(w, r, queuePath(ns, q)+"?state=dead", http.StatusSeeOther) //nolint:gosec // a path under /ui/, its parts escaped
	return nil
}

// deadAction runs respawn or delete on the selected ids ("id" fields), or on the whole dead
// letter ("all" set), a page of MaxDeadPage per script call.
func (u *UI) deadAction(r *http.Request, ns, q string, run func(ids []string, limit int) (int, error)) (int, error) {
	if err := r.ParseForm(); err != nil {
		return 0, httpapi.InvalidArg("form", "%v", err)
	}
	ids := r.PostForm["id"]
	if r.PostFormValue("all") == "" {
		if len(ids) == 0 {
			return 0, httpapi.InvalidArg("id", "select at least one job (or choose all)")
		}
		if len(ids) > queue.MaxDeadPage {
			return 0, httpapi.InvalidArg("id", "at most %d jobs at once", queue.MaxDeadPage)
		}
		return run(ids, 0)
	}
	total, err := u.cfg.Queue.DeadSize(r.Context(), ns, q)
	if err != nil {
		return 0, err
	}
	// Bounded by the size seen now: jobs that die meanwhile wait for the next click.
	n := 0
	for int64(n) < total {
		k, err := run(nil, int(min(total-int64(n), queue.MaxDeadPage)))
		n += k
		if err != nil {
			return n, err
		}
		if k == 0 {
			break
		}
	}
	return n, nil
}

func (u *UI) deadRespawn(w http.ResponseWriter, r *http.Request) error {
	return u.deadBulk(w, r, actRespawn, noteRespawned, func(ns, q string, ids []string, limit int) (int, error) {
		got, err := u.cfg.Queue.DeadRespawn(r.Context(), queue.DeadRespawnParams{Namespace: ns, Queue: q, IDs: ids, Limit: limit})
		return len(got), err
	})
}

func (u *UI) deadDelete(w http.ResponseWriter, r *http.Request) error {
	return u.deadBulk(w, r, actDelete, noteDeadDeleted, func(ns, q string, ids []string, limit int) (int, error) {
		return u.cfg.Queue.DeadDelete(r.Context(), queue.DeadDeleteParams{Namespace: ns, Queue: q, IDs: ids, Limit: limit})
	})
}

// deadBulk runs act (respawn or delete) on the dead letter of the queue the path names, on the
// form's ids or on all of it (deadAction), after a confirmation page that says how many.
func (u *UI) deadBulk(w http.ResponseWriter, r *http.Request, act jobAction, what note, run func(ns, q string, ids []string, limit int) (int, error)) error {
	ns, q, err := u.queueRef(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return httpapi.InvalidArg("form", "%v", err)
	}
	back := queuePath(ns, q) + "?state=dead"
	c := confirmation{
		Crumbs: []crumb{{"Queues", "/ui/"}, {Text: ns}, {q, queuePath(ns, q)}},
		Items:  r.PostForm["id"], Button: act.Button, Danger: act.Danger, Back: back,
	}
	if r.PostFormValue("all") != "" {
		total, err := u.cfg.Queue.DeadSize(r.Context(), ns, q)
		if err != nil {
			return err
		}
		c.Question = fmt.Sprintf("%s all %d dead jobs of %s (as many as there are now)?", act.Button, total, q)
	} else {
		c.Question = fmt.Sprintf("%s %d dead jobs of %s?", act.Button, len(c.Items), q)
	}
	if len(c.Items) > 0 || r.PostFormValue("all") != "" {
		if u.confirmFirst(w, r, c) {
			return nil
		}
	}
	n, err := u.deadAction(r, ns, q, func(ids []string, limit int) (int, error) { return run(ns, q, ids, limit) })
	if err != nil {
		return err
	}
	return done(w, r, back, what, int64(n))
}
