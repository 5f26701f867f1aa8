package server

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// fillDeadLetter makes n jobs of queue q in namespace ns dead (one try each, nacked).
func fillDeadLetter(t *testing.T, ts *testServer, ns, q string, n int) {
	t.Helper()
	ctx := ctxT(t)
	batch := make([]queue.PublishParams, n)
	for i := range batch {
		batch[i] = queue.PublishParams{Namespace: ns, Queue: q, Payload: []byte("x"), Tries: 1}
	}
	if _, err := ts.Queue.PublishMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for left := n; left > 0; {
		ds, err := ts.Queue.Consume(ctx, queue.ConsumeParams{Namespace: ns, Queues: []string{q}, Count: min(left, queue.MaxConsumeCount), TTR: time.Minute})
		if err != nil || len(ds) == 0 {
			t.Fatalf("consume: %d jobs, %v", len(ds), err)
		}
		for _, d := range ds {
			if _, err := ts.Queue.Nack(ctx, queue.NackParams{Namespace: ns, Queue: q, ID: d.ID, Delivery: d.Delivery, NoRetry: true}); err != nil {
				t.Fatal(err)
			}
		}
		left -= len(ds)
	}
	if size, err := ts.Queue.DeadSize(ctx, ns, q); err != nil || size != int64(n) {
		t.Fatalf("dead letter of %s: %d, %v; want %d", q, size, err, n)
	}
}

// A dead letter larger than one script call may move (queue.MaxDeadPage) is respawned whole by
// the dashboard's "respawn all" and deleted whole by lmstfy's delete with a large limit: the
// server runs page after page, and no job is left behind or done twice.
func TestWholeDeadLetterLargerThanAPage(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	e := lmstfyEnvOn(t, ts)
	n := queue.MaxDeadPage + 50
	fillDeadLetter(t, ts, e.ns, "respawned", n)
	fillDeadLetter(t, ts, e.ns, "deleted", n)

	d := newDashboard(t, ts)
	d.login(t)
	wantRedirect(t, d.post(t, "/ui/ns/"+e.ns+"/queues/respawned/dead/respawn", url.Values{"all": {"1"}, "confirm": {"yes"}}),
		"/ui/ns/"+e.ns+"/queues/respawned?state=dead&n="+strconv.Itoa(n)+"&note=respawned")
	st, err := ts.Queue.Stats(ctxT(t), e.ns, "respawned")
	if err != nil || st.Dead != 0 || st.Ready != int64(n) {
		t.Fatalf("after respawn all: %+v, %v; want %d ready, none dead", st, err, n)
	}

	wantLmstfy(t, e.api(t, http.MethodDelete, "deleted/deadletter?limit=5000", nil), http.StatusNoContent, nil)
	if size, err := ts.Queue.DeadSize(ctxT(t), e.ns, "deleted"); err != nil || size != 0 {
		t.Fatalf("after lmstfy's delete of the dead letter: %d left, %v", size, err)
	}
}
