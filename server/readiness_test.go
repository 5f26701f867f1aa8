package server

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// readinessSetup starts a server on a Redis of the test's own, and a client of that Redis to
// change its state under the server.
func readinessSetup(t *testing.T) (*testServer, *redis.Client) {
	t.Helper()
	rs := redistest.StartServer(t, "appendonly no")
	ts := startTestServer(t, Config{
		RedisURL: rs.URL(), Prefix: "ready", AdminToken: testAdminToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Out: io.Discard,
	}, nil)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return ts, rdb
}

// wantNotReady fails the test unless /readyz answers 503 unavailable with the reason in its
// message, on both listeners.
func wantNotReady(t *testing.T, ts *testServer, reason string) {
	t.Helper()
	for _, base := range []string{ts.PublicURL, ts.AdminURL} {
		r := do(t, http.MethodGet, base+"/readyz", "", nil)
		wantStatus(t, r, http.StatusServiceUnavailable, "unavailable")
		if !strings.Contains(string(r.Body), reason) {
			t.Fatalf("readyz body %s does not say %q", r.Body, reason)
		}
	}
}

// Redis at maxmemory (noeviction) answers PING but refuses every write: /readyz says so with the
// reason, while /healthz holds, and is ready again once memory is back.
func TestReadyzNotReadyWhileRedisIsOutOfMemory(t *testing.T) {
	t.Parallel()
	ts, rdb := readinessSetup(t)
	tok := ts.token(t, "shop")
	wantStatus(t, ts.public(t, http.MethodGet, "/readyz", "", nil), http.StatusOK, "")

	if err := rdb.ConfigSet(ctxT(t), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 1}), http.StatusServiceUnavailable, "unavailable")
	wantNotReady(t, ts, "out of memory")
	wantStatus(t, ts.public(t, http.MethodGet, "/healthz", "", nil), http.StatusOK, "")

	if err := rdb.ConfigSet(ctxT(t), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ts.public(t, http.MethodGet, "/readyz", "", nil), http.StatusOK, "")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": 2}), http.StatusCreated, "")
}

// A Redis that became a read-only replica under the server answers reads but refuses writes:
// /readyz is not ready and says why.
func TestReadyzNotReadyOnAReadOnlyReplica(t *testing.T) {
	t.Parallel()
	ts, rdb := readinessSetup(t)
	primary := redistest.StartServer(t, "appendonly no")
	host, port, _ := strings.Cut(primary.Addr(), ":")
	if err := rdb.ReplicaOf(ctxT(t), host, port).Err(); err != nil {
		t.Fatal(err)
	}
	// A replica's first sync can hold Redis past the probe's one second on a loaded machine; the
	// case here is a replica in steady state, so wait for its link to the primary to be up.
	testwait.Until(t, time.Minute, "the replica to sync", func() bool {
		info, err := rdb.Info(ctxT(t), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	wantNotReady(t, ts, "read-only replica")
	if err := rdb.ReplicaOf(ctxT(t), "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ts.public(t, http.MethodGet, "/readyz", "", nil), http.StatusOK, "")
}
