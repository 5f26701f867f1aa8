package jobs

import (
	"net/http"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"

	"github.com/sluicehq/sluice/queue"
)

// QueueJSON is a queue's depths and event counters.
type QueueJSON struct {
	Name         string `json:"name"`
	Ready        int64  `json:"ready"`
	Delayed      int64  `json:"delayed"`
	Leased       int64  `json:"leased"`
	Dead         int64  `json:"dead"`
	Done         int64  `json:"done"`
	Paused       bool   `json:"paused"`
	Published    int64  `json:"published"`
	Consumed     int64  `json:"consumed"`
	Acked        int64  `json:"acked"`
	Nacked       int64  `json:"nacked"`
	Retried      int64  `json:"retried"`
	DeadLettered int64  `json:"dead_lettered"`
	Expired      int64  `json:"expired"`
	Deleted      int64  `json:"deleted"`
	Released     int64  `json:"released"`
	Respawned    int64  `json:"respawned"`
	DeadDropped  int64  `json:"dead_dropped"`
	Purged       int64  `json:"purged"`
}

func toQueueJSON(name string, st queue.Stats) QueueJSON {
	return QueueJSON{
		Name: name, Ready: st.Ready, Delayed: st.Delayed, Leased: st.Leased, Dead: st.Dead, Done: st.Done,
		Paused: st.Paused, Published: st.Published, Consumed: st.Consumed, Acked: st.Acked, Nacked: st.Nacked,
		Retried: st.Retried, DeadLettered: st.DeadLettered, Expired: st.Expired, Deleted: st.Deleted,
		Released: st.Released, Respawned: st.Respawned, DeadDropped: st.DeadDropped, Purged: st.Purged,
	}
}

// listQueues is GET /v1/ns/{ns}/queues?cursor=&limit=: a page of the namespace's queues with their
// stats (the registry read with one SSCAN, the stats in one pipelined round trip, O(priorities)
// per queue inside Redis), and next_cursor while there are more.
func (a *API) listQueues(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	pr, err := httpapi.ReadPage(r, "queues", ns)
	if err != nil {
		return err
	}
	page, err := a.queue.QueuesPage(r.Context(), queue.QueuesPageParams{Namespace: ns, After: pr.After, Limit: pr.Limit})
	if err != nil {
		return err
	}
	stats, err := a.queue.StatsMany(r.Context(), ns, page.Queues)
	if err != nil {
		return err
	}
	out := make([]QueueJSON, len(page.Queues))
	for i, q := range page.Queues {
		out[i] = toQueueJSON(q, stats[i])
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"queues": out, "next_cursor": httpapi.NextCursor("queues", ns, page.Next)})
	return nil
}

// queueExists reports whether a queue is registered in its namespace.
func (a *API) queueExists(r *http.Request) error {
	ns, q := r.PathValue("ns"), r.PathValue("q")
	if !tenant.ValidName(q) {
		return httpapi.InvalidArg("queue", "%q %s", q, tenant.NameRule)
	}
	ok, err := a.queue.QueueExists(r.Context(), ns, q)
	if err != nil {
		return err
	}
	if !ok {
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: "no queue " + q + " in namespace " + ns}
	}
	return nil
}

// getQueue is GET /v1/ns/{ns}/queues/{q}.
func (a *API) getQueue(w http.ResponseWriter, r *http.Request) error {
	if err := a.queueExists(r); err != nil {
		return err
	}
	st, err := a.queue.Stats(r.Context(), r.PathValue("ns"), r.PathValue("q"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toQueueJSON(r.PathValue("q"), st))
	return nil
}

// deleteQueue is DELETE /v1/ns/{ns}/queues/{q}: every job of the queue is removed.
func (a *API) deleteQueue(w http.ResponseWriter, r *http.Request) error {
	if err := a.queueExists(r); err != nil {
		return err
	}
	n, err := a.queue.DeleteQueue(r.Context(), r.PathValue("ns"), r.PathValue("q"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]int64{"deleted_jobs": n})
	return nil
}

// pauseQueue is POST /v1/ns/{ns}/queues/{q}/pause: consumers get nothing until resume.
func (a *API) pauseQueue(w http.ResponseWriter, r *http.Request) error {
	if err := a.queue.Pause(r.Context(), r.PathValue("ns"), r.PathValue("q")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// resumeQueue is POST /v1/ns/{ns}/queues/{q}/resume.
func (a *API) resumeQueue(w http.ResponseWriter, r *http.Request) error {
	if err := a.queue.Resume(r.Context(), r.PathValue("ns"), r.PathValue("q")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listDead is GET /v1/ns/{ns}/queues/{q}/dead?limit=&cursor=.
func (a *API) listDead(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, queue.MaxDeadPage)
	if err != nil {
		return err
	}
	res, err := a.queue.DeadList(r.Context(), queue.DeadListParams{Namespace: r.PathValue("ns"), Queue: r.PathValue("q"), Cursor: r.URL.Query().Get("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	writeJobPage(w, res.Jobs, res.NextCursor, res.Total)
	return nil
}

type deadRequest struct {
	Limit *int     `json:"limit"`
	IDs   []string `json:"ids"`
	TTL   *float64 `json:"ttl"`
}

func (d *deadRequest) selection() (int, []string, error) {
	switch {
	case d.Limit != nil && d.IDs != nil:
		return 0, nil, httpapi.InvalidArg("ids", "give limit or ids, not both")
	case d.IDs != nil:
		if len(d.IDs) == 0 || len(d.IDs) > queue.MaxDeadPage {
			return 0, nil, httpapi.InvalidArg("ids", "%d ids; give 1..%d", len(d.IDs), queue.MaxDeadPage)
		}
		return 0, d.IDs, nil
	case d.Limit != nil:
		if *d.Limit < 1 || *d.Limit > queue.MaxDeadPage {
			return 0, nil, httpapi.InvalidArg("limit", "%d is outside 1..%d", *d.Limit, queue.MaxDeadPage)
		}
		return *d.Limit, nil, nil
	default:
		return 0, nil, httpapi.InvalidArg("limit", "give limit (the oldest jobs) or ids")
	}
}

// respawnDead is POST /v1/ns/{ns}/queues/{q}/dead/respawn: dead jobs go back to ready with
// fresh tries.
func (a *API) respawnDead(w http.ResponseWriter, r *http.Request) error {
	var req deadRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	limit, ids, err := req.selection()
	if err != nil {
		return err
	}
	ttl, err := atLeastMilli("ttl", req.TTL, "none")
	if err != nil {
		return err
	}
	out, err := a.queue.DeadRespawn(r.Context(), queue.DeadRespawnParams{
		Namespace: r.PathValue("ns"), Queue: r.PathValue("q"), IDs: ids, Limit: limit, TTL: ttl,
	})
	if err != nil {
		return err
	}
	if out == nil {
		out = []string{}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"job_ids": out, "respawned": len(out)})
	return nil
}

// deleteDead is DELETE /v1/ns/{ns}/queues/{q}/dead.
func (a *API) deleteDead(w http.ResponseWriter, r *http.Request) error {
	var req deadRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	if req.TTL != nil {
		return httpapi.InvalidArg("ttl", "only respawn takes a ttl")
	}
	limit, ids, err := req.selection()
	if err != nil {
		return err
	}
	n, err := a.queue.DeadDelete(r.Context(), queue.DeadDeleteParams{
		Namespace: r.PathValue("ns"), Queue: r.PathValue("q"), IDs: ids, Limit: limit,
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]int{"deleted": n})
	return nil
}
