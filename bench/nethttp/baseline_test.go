package nethttp

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/internal/benchkit/loadgen"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// TestBaselineServesTheLoadGenerator runs every scenario the side-by-side benchmark uses (and
// consume, which reads what publish left) against the baseline, and checks that each moved every
// job and that nothing is left in Redis.
func TestBaselineServesTheLoadGenerator(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	srv := httptest.NewServer(Baseline(env.Client, env.Prefix))
	t.Cleanup(srv.Close)
	rep, err := loadgen.Run(t.Context(), loadgen.Config{
		URL: srv.URL, Namespace: "bench", Clients: 3, Jobs: 30,
		Scenarios: []loadgen.Scenario{loadgen.Publish, loadgen.Consume, loadgen.ConsumeAck},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	requests := map[loadgen.Scenario]int64{loadgen.Publish: 30, loadgen.Consume: 30, loadgen.ConsumeAck: 60}
	for _, r := range rep.Results {
		if r.Jobs != 30 || r.Requests != requests[r.Scenario] || r.Note != "" {
			t.Errorf("%s: %+v, want 30 jobs in %d requests", r.Scenario, r, requests[r.Scenario])
		}
	}
	keys, err := env.Client.Keys(context.Background(), env.Prefix+"*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys left: %v, %v", keys, err)
	}
}

// TestSideBySideHarness starts both server processes the benchmark measures and runs a few jobs
// of each scenario through each, so the benchmark's machinery is tested by `go test` too.
func TestSideBySideHarness(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	sl := startChild(t, "sluice", env)
	base := startChild(t, "nethttp", env)
	token := createToken(t, sl.adminURL, "bench")
	scenarios := []loadgen.Scenario{loadgen.Publish, loadgen.ConsumeAck}
	for _, got := range []map[loadgen.Scenario]*figures{
		measure(t, sl, loadgen.Native, token, env.Client, 40, scenarios),
		measure(t, sl, loadgen.Lmstfy, token, env.Client, 40, scenarios),
		measure(t, base, loadgen.Native, "", env.Client, 40, scenarios),
	} {
		for _, s := range scenarios {
			f := got[s]
			if f == nil || f.jobsPerSecond <= 0 || f.server < 0 || f.redis < 0 || f.loadgen < 0 {
				t.Errorf("%s: implausible figures %+v", s, f)
			}
		}
	}
}
