package jobs

import (
	"net/http"
	"strconv"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// listJobs answers GET /v1/ns/{ns}/queues/{q}/jobs?state=...: a page of the queue's jobs in one
// state (queue.ListJobs), their payloads and results cut to queue.ListPreviewBytes.
func (a *API) listJobs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := queryLimit(r, queue.MaxListPage)
	if err != nil {
		return err
	}
	res, err := a.queue.ListJobs(r.Context(), queue.ListJobsParams{
		Namespace: r.PathValue("ns"), Queue: r.PathValue("q"), State: queue.ListState(q.Get("state")),
		Limit: limit, Cursor: q.Get("cursor"),
	})
	if err != nil {
		return err
	}
	writeJobPage(w, res.Jobs, res.NextCursor, res.Total)
	return nil
}

// queryLimit reads the optional ?limit= of a page (1..most); 0 when it is absent.
func queryLimit(r *http.Request, most int) (int, error) {
	l := r.URL.Query().Get("limit")
	if l == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > most {
		return 0, httpapi.InvalidArg("limit", "%q is not a number in 1..%d", l, most)
	}
	return n, nil
}

// writeJobPage writes a page of jobs: {"jobs": [...], "next_cursor": "...", "total": n}.
func writeJobPage(w http.ResponseWriter, js []queue.Job, next string, total int64) {
	jobs := make([]JobJSON, len(js))
	for i := range js {
		jobs[i] = toJobJSON(&js[i])
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"jobs": jobs, "next_cursor": next, "total": total})
}
