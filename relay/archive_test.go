package relay_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/mysqltest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/relay/mysqlarchive"
)

// Finished tasks reach the archive from maintenance, and Get answers from it once the task has
// left Redis.
func TestArchiveRoundTrip(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	a, err := mysqlarchive.Open(ctxT(t), mysqltest.New(t), mysqlarchive.Config{})
	if err != nil {
		t.Fatalf("mysqlarchive.Open: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	c := newClient(t, env, relay.Config{Archive: a})
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("archived result"))
	})
	setEndpoint(t, c, relay.Endpoint{Name: "arc", TargetURL: tg.URL})
	startDispatcher(t, c, relay.DispatcherConfig{MaintainInterval: -1})
	id := submit(t, c, relay.SubmitParams{Endpoint: "arc", Namespace: "team", Priority: 3, PriorityCap: 9}).ID
	done := waitFinal(t, c, id)

	res, err := c.MaintainOnce(ctxT(t))
	if err != nil || res.Archived != 1 {
		t.Fatalf("MaintainOnce = %+v, %v; want 1 archived", res, err)
	}
	if res, _ := c.MaintainOnce(ctxT(t)); res.Archived != 0 {
		t.Fatalf("second pass archived %d again", res.Archived)
	}
	// The task leaves Redis (its retention ended).
	if err := env.Client.Del(ctxT(t), env.Prefix+":relay:{ep:arc}:t:"+id).Err(); err != nil {
		t.Fatal(err)
	}
	got := get(t, c, id)
	if !got.Archived || got.Status != relay.StatusCompleted || string(got.Result) != "archived result" ||
		got.HTTPStatus != 200 || got.Namespace != "team" || got.Priority != 3 || got.Tries != 1 ||
		got.ResultHeader.Get("Content-Type") != "text/plain" {
		t.Fatalf("archived task = %+v", got)
	}
	if !got.CreatedAt.Equal(done.CreatedAt) || !got.EndedAt.Equal(done.EndedAt) {
		t.Fatalf("archived times %s %s, want %s %s", got.CreatedAt, got.EndedAt, done.CreatedAt, done.EndedAt)
	}
	if _, err := c.Get(ctxT(t), "arc.00000000000000000000000000"); err == nil {
		t.Fatal("Get(unknown) found something")
	}
}

// An archive that cannot be written does not hold up maintenance: queue timeouts (and leases)
// are still handled, and the finished tasks wait in the backlog for the archive to come back.
func TestArchiveOutageDoesNotStopMaintenance(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	a, err := mysqlarchive.Open(ctxT(t), mysqltest.New(t), mysqlarchive.Config{})
	if err != nil {
		t.Fatalf("mysqlarchive.Open: %v", err)
	}
	c := newClient(t, env, relay.Config{Archive: a})
	setEndpoint(t, c, relay.Endpoint{Name: "late", TargetURL: "https://late.example.com/", QueueTimeout: time.Millisecond})
	id := submit(t, c, relay.SubmitParams{Endpoint: "late"}).ID
	_ = a.Close() // the database goes away
	testwait.Until(t, time.Minute, "the timeout despite the archive", func() bool {
		res, err := c.MaintainOnce(ctxT(t))
		if res.TimedOut == 1 && err == nil {
			t.Fatal("MaintainOnce reported no error with the archive closed")
		}
		return get(t, c, id).Status == relay.StatusTimeout
	})
	if n, err := env.Client.ZCard(ctxT(t), env.Prefix+":relay:{ep:late}:archive").Result(); err != nil || n != 1 {
		t.Fatalf("archive backlog = %d, %v; want the task kept for later", n, err)
	}
}

// A task whose final status is read before the archive saw it keeps its finished retention until
// it is archived, however short the read retention: reading must not drop it unarchived. Once
// archived, its life is the read retention.
func TestArchiveReadBeforeArchived(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	a, err := mysqlarchive.Open(ctxT(t), mysqltest.New(t), mysqlarchive.Config{})
	if err != nil {
		t.Fatalf("mysqlarchive.Open: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	const read = 50 * time.Millisecond
	c := newClient(t, env, relay.Config{Archive: a, ReadRetention: read})
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {})
	setEndpoint(t, c, relay.Endpoint{Name: "arc", TargetURL: tg.URL})
	startDispatcher(t, c, relay.DispatcherConfig{MaintainInterval: -1})
	id := submit(t, c, relay.SubmitParams{Endpoint: "arc"}).ID
	waitFinal(t, c, id) // reads the final status
	key := env.Prefix + ":relay:{ep:arc}:t:" + id
	if ttl := env.Client.PTTL(ctxT(t), key).Val(); ttl <= read {
		t.Fatalf("read but unarchived task lives %s more, want its finished retention", ttl)
	}
	if res, err := c.MaintainOnce(ctxT(t)); err != nil || res.Archived != 1 {
		t.Fatalf("MaintainOnce = %+v, %v; want 1 archived", res, err)
	}
	if ttl := env.Client.PTTL(ctxT(t), key).Val(); ttl > read {
		t.Fatalf("archived read task lives %s more, want at most the read retention %s", ttl, read)
	}
	if r, err := a.Get(ctxT(t), id); err != nil || r.Status != string(relay.StatusCompleted) {
		t.Fatalf("archive.Get = %+v, %v", r, err)
	}
}
