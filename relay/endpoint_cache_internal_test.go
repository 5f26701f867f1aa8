package relay

import (
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
	c, err := NewClient(env.Client, Config{Prefix: env.Prefix, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
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
