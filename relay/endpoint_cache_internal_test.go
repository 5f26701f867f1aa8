package relay

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// A Client reads its own endpoint changes at once, even when a refresh that began before the
// change (and so loaded the old settings) stores its snapshot after it: that snapshot is not used,
// and the next read loads the new settings. A callback published right after its endpoint was set
// must count against it.
func TestEndpointCacheReadsOwnChangesPastARefreshUnderWay(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := internalClient(t, env, Config{RefreshInterval: time.Hour})
	ctx := t.Context()
	if _, err := c.SetEndpoint(ctx, Endpoint{Name: "old", TargetURL: "http://127.0.0.1:9/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Endpoint(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	// Another caller's refresh is under way: it read the generation and the settings before the
	// change below, and stores its snapshot after it.
	ec := &c.eps
	ec.mu.Lock()
	gen := ec.gen.Load()
	loaded := *ec.snap.Load()
	if _, err := c.SetEndpoint(ctx, Endpoint{Name: "new", TargetURL: "http://127.0.0.1:9/new"}); err != nil {
		t.Fatal(err)
	}
	loaded.gen, loaded.checked = gen, time.Now()
	ec.snap.Store(&loaded)
	ec.mu.Unlock()
	if e, err := c.Endpoint(ctx, "new"); err != nil || e.TargetURL != "http://127.0.0.1:9/new" {
		t.Fatalf("Endpoint(new) right after SetEndpoint = %+v, %v", e, err)
	}
}

// A submit naming an endpoint this Client's cached settings lack reads Redis before it answers
// ErrNotFound: here the endpoint was stored without a push reaching the Client (as by a writer
// whose message was lost), and the Client caches settings for an hour.
func TestSubmitReadsThroughForAnUnknownEndpoint(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := internalClient(t, env, Config{RefreshInterval: time.Hour})
	ctx := t.Context()
	if _, err := c.Submit(ctx, SubmitParams{Endpoint: "quiet"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before the endpoint exists: %v", err)
	}
	e := Endpoint{Name: "quiet", TargetURL: "https://quiet.example.com/api"}.withDefaults(c.cfg.PendingRetention)
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.HSet(ctx, c.reg.settings, "quiet", b).Err(); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Incr(ctx, c.reg.version).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctx, SubmitParams{Endpoint: "quiet"}); err != nil {
		t.Fatalf("by name: %v", err)
	}
	if r, err := c.Submit(ctx, SubmitParams{TargetURL: "https://quiet.example.com/api/x"}); err != nil || r.Endpoint != "quiet" {
		t.Fatalf("by target URL: %+v, %v", r, err)
	}
	if _, err := c.Submit(ctx, SubmitParams{Endpoint: "still-unknown"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an endpoint that does not exist: %v", err)
	}
}
