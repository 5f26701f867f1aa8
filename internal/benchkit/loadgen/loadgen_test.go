package loadgen

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// target is a real server on a loopback listener over a per-test Redis prefix.
type target struct {
	URL   string
	Token string
}

func setup(t testing.TB) target {
	t.Helper()
	srv := servertest.Start(t, server.Config{})
	return target{URL: srv.PublicURL, Token: createToken(t, srv.AdminURL, "bench")}
}

// createToken makes a namespace token through the admin API and returns its secret.
func createToken(t testing.TB, adminURL, ns string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, adminURL+"/v1/namespaces/"+ns+"/tokens", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	defer resp.Body.Close()
	var ans struct {
		Token  string `json:"token"`
		Secret string `json:"secret"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create token: HTTP %d, %v", resp.StatusCode, err)
	}
	return cmp.Or(ans.Token, ans.Secret)
}

func TestRunCounts(t *testing.T) {
	t.Parallel()
	tg := setup(t)
	var seen []Scenario
	rep, err := Run(t.Context(), Config{
		URL: tg.URL, Token: tg.Token, Namespace: "bench", Clients: 4, Jobs: 100,
		OnResult: func(r Result) { seen = append(seen, r.Scenario) },
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Results) != len(Scenarios) || len(seen) != len(Scenarios) {
		t.Fatalf("results %+v, OnResult saw %v", rep.Results, seen)
	}
	requests := map[Scenario]int64{Publish: 100, Consume: 100, ConsumeAck: 200, BulkPublish: 2, BatchConsume: 2}
	for i, r := range rep.Results {
		if r.Scenario != Scenarios[i] || seen[i] != r.Scenario {
			t.Errorf("result %d is %s, want %s", i, r.Scenario, Scenarios[i])
		}
		if r.Jobs != 100 || r.Requests != requests[r.Scenario] || r.Note != "" || r.Skipped != "" {
			t.Errorf("%s: %+v, want 100 jobs in %d requests", r.Scenario, r, requests[r.Scenario])
		}
		if r.Seconds <= 0 || r.JobsPerSecond <= 0 || r.P50Millis <= 0 || r.P99Millis < r.P50Millis || r.MaxMillis < r.P99Millis {
			t.Errorf("%s: implausible figures %+v", r.Scenario, r)
		}
	}
	if rep.Clients != 4 || rep.Jobs != 100 || rep.BodySize != 100 || rep.Batch != 64 || rep.API != Native {
		t.Errorf("report header %+v", rep)
	}
	// The run consumed what it published and acked what it consumed: nothing is left.
	queues := tg.queues(t)
	if len(queues) != 3 { // consume reads publish's queue, batch-consume bulk-publish's
		t.Errorf("the run used %d queues, want 3: %+v", len(queues), queues)
	}
	for _, q := range queues {
		if !strings.HasPrefix(q.Name, "bench-") || q.Ready != 0 || q.Leased != 0 || q.Delayed != 0 || q.Dead != 0 || q.Published != q.Acked {
			t.Errorf("queue left with jobs: %+v", q)
		}
	}
}

// behind starts a server in front of the target whose handler gets each request and a reverse
// proxy to the target, closed when the test ends.
func (tg target) behind(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, proxy http.Handler)) *httptest.Server {
	t.Helper()
	backend, err := url.Parse(tg.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, proxy) }))
	t.Cleanup(front.Close)
	return front
}

type queueStats struct {
	Name                                           string
	Ready, Delayed, Leased, Dead, Published, Acked int64
}

// queues lists the bench namespace's queues with their stats.
func (tg target) queues(t *testing.T) []queueStats {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, tg.URL+"/v1/ns/bench/queues", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tg.Token)
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct{ Queues []queueStats }
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	return ans.Queues
}

func TestRunDurationBound(t *testing.T) {
	t.Parallel()
	tg := setup(t)
	start := time.Now()
	rep, err := Run(t.Context(), Config{
		URL: tg.URL, Token: tg.Token, Namespace: "bench", Clients: 2, Duration: 100 * time.Millisecond,
		Scenarios: []Scenario{Consume, Publish}, BodySize: 10,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("a 100ms-per-scenario run took %v", took)
	}
	if len(rep.Results) != 2 || rep.Results[0].Scenario != Publish || rep.Results[1].Scenario != Consume {
		t.Fatalf("results %+v", rep.Results)
	}
	pub, con := rep.Results[0], rep.Results[1]
	if pub.Jobs == 0 || con.Jobs == 0 || con.Jobs > pub.Jobs {
		t.Fatalf("published %d, consumed %d", pub.Jobs, con.Jobs)
	}
	if con.Jobs == pub.Jobs && con.Note == "" {
		// Draining the queue before the time was up is noted.
		t.Logf("consume drained the queue exactly at the deadline: %+v", con)
	}
}

func TestRunSmallBatchAndDryQueue(t *testing.T) {
	t.Parallel()
	tg := setup(t)
	rep, err := Run(t.Context(), Config{
		URL: tg.URL, Token: tg.Token, Namespace: "bench", Clients: 3, Jobs: 10, Batch: 4,
		Scenarios: []Scenario{BulkPublish, BatchConsume},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range rep.Results {
		if r.Jobs != 10 || r.Requests != 3 {
			t.Errorf("%s: %+v, want 10 jobs in 3 requests of at most 4", r.Scenario, r)
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	tg := setup(t)
	_, err := Run(t.Context(), Config{URL: tg.URL, Token: "sk_wrong", Namespace: "bench", Jobs: 5, Clients: 2})
	if err == nil || !strings.Contains(err.Error(), "publish: ") || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("Run with a wrong token: %v", err)
	}
	_, err = Run(t.Context(), Config{URL: "ftp://x", API: "soap", Clients: -1, Batch: 5000, Scenarios: []Scenario{"nap"}, Queue: "a/b"})
	for _, want := range []string{"URL", "API", "Clients", "Batch", `scenario "nap"`, `Queue "a/b"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid config: error %v lacks %s", err, want)
		}
	}
	if _, err := ParseScenarios("publish,consume-ack"); err != nil {
		t.Errorf("ParseScenarios: %v", err)
	}
	if s, _ := ParseScenarios("all"); len(s) != len(Scenarios) {
		t.Errorf("ParseScenarios(all) = %v", s)
	}
}

func TestRunLmstfy(t *testing.T) {
	t.Parallel()
	tg := setup(t)
	rep, err := Run(t.Context(), Config{URL: tg.URL, API: Lmstfy, Token: tg.Token, Namespace: "bench", Clients: 3, Jobs: 70})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	requests := map[Scenario]int64{Publish: 70, Consume: 70, ConsumeAck: 140, BulkPublish: 2, BatchConsume: 2}
	for _, r := range rep.Results {
		if r.Jobs != 70 || r.Requests != requests[r.Scenario] || r.Note != "" {
			t.Errorf("%s: %+v, want 70 jobs in %d requests", r.Scenario, r, requests[r.Scenario])
		}
	}
	if len(rep.Results) != len(Scenarios) {
		t.Fatalf("results %+v", rep.Results)
	}
	_, err = Run(t.Context(), Config{URL: tg.URL, API: Lmstfy, Token: "sk_wrong", Namespace: "bench", Jobs: 1})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("lmstfy run with a wrong token: %v", err)
	}
}

// TestRunWindows checks that OnWindow brackets exactly the measured requests of each scenario: a
// counting proxy in front of the server sees the untimed filling and acks outside the windows.
func TestRunWindows(t *testing.T) {
	t.Parallel()
	tg := setup(t)
	var served atomic.Int64
	front := tg.behind(t, func(w http.ResponseWriter, r *http.Request, proxy http.Handler) {
		served.Add(1)
		proxy.ServeHTTP(w, r)
	})
	var (
		mu      sync.Mutex
		windows []Scenario
		inside  = map[Scenario]int64{}
	)
	rep, err := Run(t.Context(), Config{
		URL: front.URL, Token: tg.Token, Namespace: "bench", Clients: 2, Jobs: 20,
		Scenarios: []Scenario{ConsumeAck, Consume},
		OnWindow: func(s Scenario) func() {
			mu.Lock()
			windows = append(windows, s)
			mu.Unlock()
			opened := served.Load()
			return func() { inside[s] = served.Load() - opened }
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(windows) != 2 || windows[0] != Consume || windows[1] != ConsumeAck {
		t.Fatalf("windows opened for %v, want [consume consume-ack]", windows)
	}
	for _, r := range rep.Results {
		if inside[r.Scenario] != r.Requests {
			t.Errorf("%s: %d requests inside its window, want the %d measured", r.Scenario, inside[r.Scenario], r.Requests)
		}
	}
	// Both scenarios filled their queue (one bulk request each) and consume acked its 20 leases
	// afterwards: 2 + 20 requests outside the windows.
	if outside := served.Load() - inside[Consume] - inside[ConsumeAck]; outside != 22 {
		t.Errorf("%d requests outside the windows, want 22", outside)
	}
}

// TestRunProcessesCPU checks that each result carries the CPU per job of the named processes and
// of the load generator, and that a process that cannot be read is a config error naming it.
func TestRunProcessesCPU(t *testing.T) {
	t.Parallel()
	tg := setup(t)
	rep, err := Run(t.Context(), Config{
		URL: tg.URL, Token: tg.Token, Namespace: "bench", Clients: 2, Jobs: 30,
		Scenarios: []Scenario{Publish}, Processes: map[string]int{"server": os.Getpid()},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	cpu := rep.Results[0].CPU
	if len(cpu) != 2 || cpu["server"] < 0 || cpu[SelfProcess] < 0 {
		t.Fatalf("CPU per job %v, want server and %s", cpu, SelfProcess)
	}
	for _, procs := range []map[string]int{{"redis": 0}, {"redis": 1 << 30}, {SelfProcess: os.Getpid()}} {
		_, err := Run(t.Context(), Config{URL: tg.URL, Token: tg.Token, Namespace: "bench", Jobs: 1, Processes: procs})
		if err == nil || !strings.Contains(err.Error(), "Processes") {
			t.Errorf("Processes %v: error %v", procs, err)
		}
	}
}

// TestLmstfyServerWithoutBulk runs every scenario against an lmstfy server of the 1.0 kind: no
// bulk publish route (404) and one job per consume whatever count asks for. It stands in front of
// Sluice's lmstfy routes as a proxy that answers so. The consume-ack queue is filled one job per
// request, bulk-publish is skipped with a reason, and batch-consume reads one job per request.
func TestLmstfyServerWithoutBulk(t *testing.T) {
	t.Parallel()
	tg := setup(t)
	front := tg.behind(t, func(w http.ResponseWriter, r *http.Request, proxy http.Handler) {
		if strings.HasSuffix(r.URL.Path, "/bulk") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"api not found"}`))
			return
		}
		q := r.URL.Query()
		q.Del("count")
		r.URL.RawQuery = q.Encode()
		proxy.ServeHTTP(w, r)
	})
	rep, err := Run(t.Context(), Config{URL: front.URL, API: Lmstfy, Token: tg.Token, Namespace: "bench", Clients: 2, Jobs: 30})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	requests := map[Scenario]int64{Publish: 30, Consume: 30, ConsumeAck: 60, BatchConsume: 30}
	for _, r := range rep.Results {
		if r.Scenario == BulkPublish {
			if !strings.Contains(r.Skipped, "no bulk publish route") {
				t.Errorf("bulk-publish: %+v, want it skipped", r)
			}
			continue
		}
		if r.Jobs != 30 || r.Requests != requests[r.Scenario] || r.Skipped != "" {
			t.Errorf("%s: %+v, want 30 jobs in %d requests", r.Scenario, r, requests[r.Scenario])
		}
	}
	for _, q := range tg.queues(t) {
		if q.Ready != 0 || q.Leased != 0 || q.Published != q.Acked {
			t.Errorf("queue left with jobs: %+v", q)
		}
	}
}
