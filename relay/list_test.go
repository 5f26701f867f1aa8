package relay_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
)

// listAll reads a whole list page by page (limit each) and returns the pages' sizes too.
func listAll(t *testing.T, c *relay.Client, endpoint string, list relay.TaskList, limit int) ([]relay.ListedTask, []int) {
	t.Helper()
	var all []relay.ListedTask
	var sizes []int
	offset := 0
	for {
		page, err := c.ListTasks(ctxT(t), relay.ListTasksParams{Endpoint: endpoint, List: list, Offset: offset, Limit: limit})
		if err != nil {
			t.Fatalf("ListTasks(%s, %s, %d): %v", endpoint, list, offset, err)
		}
		all, sizes = append(all, page.Tasks...), append(sizes, len(page.Tasks))
		if page.Next == 0 {
			return all, sizes
		}
		offset = page.Next
	}
}

// Pending tasks list in the order they start (priority, then first come), page by page, each
// with the place Get reports; a slot held by a caller lists as running; bad pages change nothing
// and name their field.
func TestListTasksPendingInStartOrderAndPaged(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "p", TargetURL: "http://127.0.0.1:1/", Concurrency: 3})
	var ids []string
	for i, pri := range []int{0, 5, 0, 9, 5} {
		ids = append(ids, submit(t, c, relay.SubmitParams{Endpoint: "p", Priority: pri, PriorityCap: 9,
			Subject: "user" + string(rune('a'+i))}).ID)
	}
	got, sizes := listAll(t, c, "p", relay.ListPending, 2)
	if len(sizes) != 3 || sizes[0] != 2 || sizes[2] != 1 {
		t.Fatalf("page sizes %v, want 2, 2, 1", sizes)
	}
	want := []string{ids[3], ids[1], ids[4], ids[0], ids[2]}
	for i, lt := range got {
		if lt.ID != want[i] || lt.Position != int64(i) || lt.Status != relay.StatusPending || lt.Slot != "" {
			t.Fatalf("entry %d = %s at %d (%s), want %s at %d", i, lt.ID, lt.Position, lt.Status, want[i], i)
		}
		if g := get(t, c, lt.ID); g.WaitNum != lt.Position || g.Subject != lt.Subject || g.Priority != lt.Priority || lt.CreatedAt.IsZero() {
			t.Fatalf("entry %d: listed %+v, Get says %+v", i, lt.Task, g)
		}
	}
	page, err := c.ListTasks(ctxT(t), relay.ListTasksParams{Endpoint: "p", List: relay.ListPending})
	if err != nil || page.Total != 5 || len(page.Tasks) != 5 || page.Next != 0 {
		t.Fatalf("default page: %d tasks of %d, next %d, %v", len(page.Tasks), page.Total, page.Next, err)
	}

	slot, err := c.AcquireSlot(ctxT(t), "p", "callback-7", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slot.Release(ctxT(t)) })
	running, _ := listAll(t, c, "p", relay.ListRunning, 10)
	if len(running) != 1 || running[0].Slot != "callback-7" || running[0].ID != "" || !running[0].Until.After(time.Now()) {
		t.Fatalf("running list with a slot held: %+v", running)
	}

	for _, bad := range []struct {
		p     relay.ListTasksParams
		field string
	}{
		{relay.ListTasksParams{Endpoint: "p", List: "done"}, "list"},
		{relay.ListTasksParams{Endpoint: "p", List: relay.ListPending, Offset: -1}, "offset"},
		{relay.ListTasksParams{Endpoint: "p", List: relay.ListPending, Limit: relay.MaxListTasks + 1}, "limit"},
	} {
		_, err := c.ListTasks(ctxT(t), bad.p)
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != bad.field {
			t.Fatalf("ListTasks(%+v) = %v, want a field error on %s", bad.p, err, bad.field)
		}
	}
	if _, err := c.ListTasks(ctxT(t), relay.ListTasksParams{Endpoint: "nope", List: relay.ListPending}); !errors.Is(err, relay.ErrNotFound) {
		t.Fatalf("unknown endpoint: %v", err)
	}
}

// A call in flight lists as running until its lease ends, a failed one as retrying until its
// backoff ends; CancelTasks cancels both, and refuses a selection naming another endpoint's task
// before it cancels any.
func TestListTasksRunningAndRetryingThenCancel(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	release := make(chan struct{})
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		<-release
	})
	setEndpoint(t, c, relay.Endpoint{Name: "r", TargetURL: tg.URL, Concurrency: 2, RetryBackoff: time.Hour, Timeout: time.Minute})
	setEndpoint(t, c, relay.Endpoint{Name: "other", TargetURL: tg.URL})
	failing := submit(t, c, relay.SubmitParams{Endpoint: "r", TargetURL: tg.URL + "/fail"}).ID
	slow := submit(t, c, relay.SubmitParams{Endpoint: "r", TargetURL: tg.URL + "/slow"}).ID
	foreign := submit(t, c, relay.SubmitParams{Endpoint: "other"}).ID
	startDispatcher(t, c, relay.DispatcherConfig{})
	t.Cleanup(func() { close(release) }) // before the dispatcher stops: it waits for its calls

	var retrying, running []relay.ListedTask
	testwait.Until(t, 30*time.Second, "one task retrying and one running", func() bool {
		retrying, _ = listAll(t, c, "r", relay.ListRetrying, 10)
		running, _ = listAll(t, c, "r", relay.ListRunning, 10)
		return len(retrying) == 1 && len(running) == 1
	})
	if retrying[0].ID != failing || retrying[0].Tries != 1 || retrying[0].HTTPStatus != http.StatusBadGateway ||
		time.Until(retrying[0].Until) < 45*time.Minute || retrying[0].WaitNum != -1 {
		t.Fatalf("retrying: %+v", retrying[0])
	}
	if running[0].ID != slow || running[0].Status != relay.StatusProcessing || !running[0].Until.After(time.Now()) || running[0].StartedAt.IsZero() {
		t.Fatalf("running: %+v", running[0])
	}

	if _, err := c.CancelTasks(ctxT(t), "r", []string{failing, foreign}); !errors.Is(err, relay.ErrNotFound) {
		t.Fatalf("a selection with another endpoint's task: %v", err)
	}
	if st := get(t, c, failing).Status; st != relay.StatusPending {
		t.Fatalf("the refused selection changed a task: %s", st)
	}
	res, err := c.CancelTasks(ctxT(t), "r", []string{failing, slow})
	if err != nil || len(res) != 2 || !res[0].Cancelled || !res[1].Cancelled {
		t.Fatalf("CancelTasks: %+v %v", res, err)
	}
	if left, _ := listAll(t, c, "r", relay.ListRetrying, 10); len(left) != 0 {
		t.Fatalf("a cancelled task still retrying: %+v", left)
	}
	for _, id := range []string{failing, slow} {
		if st := get(t, c, id).Status; st != relay.StatusCancelled {
			t.Fatalf("%s: %s after cancel", id, st)
		}
	}
	if st := get(t, c, foreign).Status; st.Final() {
		t.Fatalf("the other endpoint's task: %s", st)
	}
}
