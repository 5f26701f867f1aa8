package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// fillNamespace gives namespace ns queues queues of one job and tokens tokens; it returns one of
// the tokens.
func fillNamespace(t *testing.T, ts *testServer, ns string, queues, tokens int) string {
	t.Helper()
	tok := ts.token(t, ns)
	for i := 1; i < tokens; i++ {
		ts.token(t, ns)
	}
	for i := range queues {
		if _, err := ts.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: ns, Queue: fmt.Sprintf("q%d", i), Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	return tok
}

// waitDeleted waits until namespace ns is gone: no namespace, no queue, no token.
func waitDeleted(t *testing.T, ts *testServer, ns string) {
	t.Helper()
	testwait.Until(t, 2*time.Minute, "namespace "+ns+" deleted", func() bool {
		return ts.adminDo(t, http.MethodGet, "/v1/namespaces/"+ns, nil).Status == http.StatusNotFound
	})
	if n, err := ts.Queue.QueueCount(ctxT(t), ns); err != nil || n != 0 {
		t.Fatalf("queues left: %d, %v", n, err)
	}
	if n, err := ts.Tokens.Count(ctxT(t), ns); err != nil || n != 0 {
		t.Fatalf("tokens left: %d, %v", n, err)
	}
}

// A namespace too big to delete within the request answers 202 with the progress; from then on
// its tokens do no work and nothing of its name is created; the deleter finishes it in bounded
// batches, leaving the other namespaces alone, and the name is free again after.
func TestNamespaceDeleteRunsInTheBackground(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.srv.deleteInline = 0
	tok := fillNamespace(t, ts, "big", 260, 700)
	other := fillNamespace(t, ts, "other", 3, 1)

	r := ts.adminDo(t, http.MethodDelete, "/v1/namespaces/big", nil)
	wantStatus(t, r, http.StatusAccepted, "")
	if !strings.Contains(string(r.Body), `"deleting":{"started_at"`) {
		t.Fatalf("202 without progress: %s", r.Body)
	}
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/big/queues/q1/jobs", tok, `{"payload":1}`), http.StatusConflict, "conflict")
	wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/namespaces/big/tokens", map[string]any{}), http.StatusConflict, "conflict")
	wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/namespaces", map[string]string{"name": "big"}), http.StatusConflict, "conflict")
	if r := ts.adminDo(t, http.MethodGet, "/v1/namespaces/big", nil); r.Status == http.StatusOK && !strings.Contains(string(r.Body), `"deleting"`) {
		t.Fatalf("GET of a namespace being deleted: %s", r.Body)
	}
	// A second DELETE goes on with the same deletion.
	if r := ts.adminDo(t, http.MethodDelete, "/v1/namespaces/big", nil); r.Status != http.StatusAccepted && r.Status != http.StatusNotFound && r.Status != http.StatusOK {
		t.Fatalf("second DELETE: %d %s", r.Status, r.Body)
	}

	waitDeleted(t, ts, "big")
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/ns/other/queues/q0/jobs", other, `{"payload":1}`), http.StatusCreated, "")
	if n, _ := ts.Queue.QueueCount(ctxT(t), "other"); n != 3 {
		t.Fatalf("other namespace has %d queues", n)
	}
	wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/namespaces/big/tokens", map[string]any{}), http.StatusCreated, "")
}

// A deletion recorded in Redis with no request working on it (the instance that started it was
// killed) is carried on to the end by the deleter of a running instance.
func TestNamespaceDeletionResumesWithoutItsRequest(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	fillNamespace(t, ts, "orphan", 120, 30)
	if _, err := ts.srv.deletions.Start(ctxT(t), "orphan"); err != nil {
		t.Fatal(err)
	}
	waitDeleted(t, ts, "orphan")
}

// A small namespace is deleted within the request, which answers 200 with the counts; its
// schedules go with it, those of a queue never published to too.
func TestSmallNamespaceDeletesAtOnce(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := fillNamespace(t, ts, "small", 2, 2)
	wantStatus(t, ts.public(t, http.MethodPut, "/v1/ns/small/schedules/hourly", tok,
		`{"every":3600,"job":{"queue":"q0","payload":{}}}`), http.StatusOK, "")
	wantStatus(t, ts.public(t, http.MethodPut, "/v1/ns/small/schedules/later", tok,
		`{"every":3600,"paused":true,"job":{"queue":"unpublished","payload":{}}}`), http.StatusOK, "")
	r := ts.adminDo(t, http.MethodDelete, "/v1/namespaces/small", nil)
	wantStatus(t, r, http.StatusOK, "")
	if want := `{"deleted_jobs":2,"deleted_queues":3,"revoked_tokens":2}`; strings.TrimSpace(string(r.Body)) != want {
		t.Fatalf("DELETE = %s, want %s", r.Body, want)
	}
	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/namespaces/small", nil), http.StatusNotFound, "not_found")
	if left, err := ts.Queue.Schedules().List(ctxT(t), "small", queue.ListSchedulesParams{}); err != nil || len(left) != 0 {
		t.Fatalf("schedules left after the delete: %v, %v", left, err)
	}
}

// The dashboard's namespace page shows a deletion's progress.
func TestDashboardShowsDeletionProgress(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	fillNamespace(t, ts, "gone", 1, 1)
	// Recorded as a deletion in progress, with the deleter's lease held so that it waits.
	if _, err := ts.srv.deletions.Lease(ctxT(t), "gone", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.srv.deletions.Start(ctxT(t), "gone"); err != nil {
		t.Fatal(err)
	}
	d := newDashboard(t, ts)
	d.login(t)
	wantPage(t, d.get(t, "/ui/ns/gone"), http.StatusOK, `id="deleting"`, "0 tokens revoked")
}

// A namespace whose queue registry is a large hash table is deleted to the end: each step goes on
// where the last one stopped in the registry. (Started from the registry's beginning, a step
// walked past ever more emptied buckets and at last found no queue in the pages it may read:
// with 100,000 queues and steps of 50 the deletion stopped after about 6,000; here, with steps of
// one queue, after a few dozen.)
func TestLargeNamespaceDeletionEnds(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.srv.deleteInline = 0
	ts.srv.deleteScans.batch = 1
	fillNamespace(t, ts, "wide", 600, 1)
	wantStatus(t, ts.adminDo(t, http.MethodDelete, "/v1/namespaces/wide", nil), http.StatusAccepted, "")
	waitDeleted(t, ts, "wide")
}
