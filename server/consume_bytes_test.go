package server

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/jobs"
)

// The case over HTTP: 500 jobs of 1 MiB and one consume of count 500 with a long TTR. The
// answer carries at most max_consume_bytes of jobs, every job it leased is in it, and the rest stay
// ready for the next consume.
func TestConsumeOfManyLargeJobsIsBounded(t *testing.T) {
	t.Parallel()
	const jobs500, jobBytes = 500, 1 << 20
	ts := newTestServer(t)
	tok := ts.token(t, "big")
	payload := append(append([]byte(`"`), bytes.Repeat([]byte("a"), jobBytes-2)...), '"') // a JSON string
	// 5 MiB a call: a batch of 50 MiB outlasted the client's 3 s read timeout on a loaded machine.
	batch := make([]queue.PublishParams, 5)
	for i := range batch {
		batch[i] = queue.PublishParams{Namespace: "big", Queue: "q", Payload: payload}
	}
	for range jobs500 / len(batch) {
		if _, err := ts.Queue.PublishMany(ctxT(t), batch); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}

	answered := 0
	for round := 1; round <= 2; round++ {
		r := ts.public(t, http.MethodPost, "/v1/ns/big/consume", tok, map[string]any{"queues": []string{"q"}, "count": jobs500, "ttr": 300})
		wantStatus(t, r, http.StatusOK, "")
		var got struct {
			Jobs []jobs.DeliveryJSON `json:"jobs"`
		}
		r.JSON(t, &got)
		size := 0
		for _, d := range got.Jobs {
			size += len(d.Payload)
		}
		answered += len(got.Jobs)
		t.Logf("consume %d: %d jobs, a %d-byte body", round, len(got.Jobs), len(r.Body))
		if len(got.Jobs) == 0 || size > 4<<20 || len(r.Body) > 4<<20+64<<10 {
			t.Fatalf("consume %d answered %d jobs, %d payload bytes, a %d-byte body; want 1 or more within the 4 MiB default",
				round, len(got.Jobs), size, len(r.Body))
		}
		st, err := ts.Queue.Stats(ctxT(t), "big", "q")
		if err != nil {
			t.Fatal(err)
		}
		if st.Leased != int64(answered) || st.Ready != int64(jobs500-answered) {
			t.Fatalf("after consume %d (%d jobs answered in all): %d leased, %d ready; want exactly the answered ones leased",
				round, answered, st.Leased, st.Ready)
		}
	}
}
