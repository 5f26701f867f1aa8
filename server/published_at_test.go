package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/jobs"
)

// A job published alone, due now and without a ttl, is stamped with the server's reading of
// Redis's clock rather than by TIME in its script (queue/clock.go): its published_at is never
// after Redis's clock when the publish answered, and at most 28 ms before Redis's clock when it
// was sent (docs/job-states.md); its due time is its publish time.
func TestPublishedAtOfALoneJobIsRedisTimeWithinTheBound(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	const bound = 28 * time.Millisecond
	redisMs := func() int64 {
		t.Helper()
		now, err := ts.env.Client.Time(ctxT(t)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now.UnixMilli()
	}
	for i := range 20 {
		before := redisMs()
		r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": i})
		wantStatus(t, r, http.StatusCreated, "")
		after := redisMs()
		var pub struct {
			JobID string `json:"job_id"`
		}
		r.JSON(t, &pub)
		r = ts.public(t, http.MethodGet, qpath+"/jobs/"+pub.JobID, tok, nil)
		wantStatus(t, r, http.StatusOK, "")
		var job jobs.JobJSON
		r.JSON(t, &job)
		published := job.PublishedAt.UnixMilli()
		if published > after || published < before-bound.Milliseconds() {
			t.Fatalf("publish %d: published_at %d, Redis's clock %d before the publish and %d after", i, published, before, after)
		}
		if job.DueAt == nil || !job.DueAt.Equal(job.PublishedAt) {
			t.Fatalf("publish %d: due_at %v, published_at %v", i, job.DueAt, job.PublishedAt)
		}
	}
}
