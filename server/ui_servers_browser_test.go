package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

// consumerOnServersPage sends req, a consume that blocks until a job comes, in the background,
// opens the dashboard's servers page and waits until row lists the consumer as waiting for jobs.
// It returns the browser, the row's text, and a channel that gets the consume's error once it is
// answered.
func consumerOnServersPage(t *testing.T, ts *testServer, req *http.Request, row string) (b *browsertest.Browser, who string, answered <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}()
	b, _ = openDashboard(t, ts)
	b.Navigate(ts.AdminURL + "/ui/servers")
	waitText(t, b, row, "waiting for jobs")
	return b, b.Text(row), done
}

// serveConsumer publishes a job to the consumer's queue, waits for its consume to be answered and
// for row to say it is between consumes.
func serveConsumer(t *testing.T, ts *testServer, b *browsertest.Browser, row, tok, queue string, answered <-chan error) {
	t.Helper()
	wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/"+queue+"/jobs", tok, `{"payload":"hi"}`), 201, "")
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	waitText(t, b, row, "between consumes")
}

// TestServersPageInChromium: a worker blocked in a consume is listed under this server with its
// token, address and queues while it waits, and stays listed (between consumes) after its job
// came; the Redis panel names the version, the memory, the operations per second and the
// persistence.
func TestServersPageInChromium(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.UISampleInterval = 50 * time.Millisecond })
	tok := ts.token(t, "shop")
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, ts.PublicURL+"/v1/ns/shop/consume", strings.NewReader(`{"queues":["mail","sms"],"timeout":20}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	row := `tr[data-consumer="shop|mail, sms"]`
	b, who, answered := consumerOnServersPage(t, ts, req, row)
	if !strings.Contains(who, "from 127.0.0.1") || !strings.Contains(who, "token ") {
		t.Fatalf("the consumer is shown as %q, want its token and address", who)
	}
	if n := browsertest.Eval[float64](b, `document.querySelectorAll("section.server").length`); n != 1 {
		t.Fatalf("%v servers listed, want this one", n)
	}
	serveConsumer(t, ts, b, row, tok, "sms", answered)

	for sel, want := range map[string]string{"#redis-version": ".", "#redis-ops": "/s", "#redis-memory": "B", "#redis-mode": "primary"} {
		waitText(t, b, sel, want)
	}
	if p := b.Text("#redis-persistence"); p == "" {
		t.Fatal("no persistence setting shown")
	}
}

// TestServersPageListsLmstfyConsumersInChromium: a worker blocked in a consume of the
// lmstfy-compatible API is listed like a native one, with its token, address, queues and API, and
// between consumes once its job came.
func TestServersPageListsLmstfyConsumersInChromium(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.UISampleInterval = 50 * time.Millisecond })
	tok := ts.token(t, "shop")
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, ts.PublicURL+"/api/shop/orders,refunds?timeout=20", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Token", tok)
	row := `tr[data-consumer="shop|orders, refunds"][data-api="lmstfy"]`
	b, who, answered := consumerOnServersPage(t, ts, req, row)
	if !strings.Contains(who, "from 127.0.0.1") || !strings.Contains(who, "token ") || !strings.Contains(who, "lmstfy-compatible") {
		t.Fatalf("the consumer is shown as %q, want its token, address and API", who)
	}
	serveConsumer(t, ts, b, row, tok, "refunds", answered)
}

// TestServersPageShowsClusterNodesInChromium: on a server whose Redis is a Cluster of three
// primaries, the Redis panel lists each node with its role, memory, clients, and its CPU once a
// refresh has two readings to compare.
func TestServersPageShowsClusterNodesInChromium(t *testing.T) {
	t.Parallel()
	env := redistest.NewCluster(t)
	ts := newTestServerOn(t, env)
	b, _ := openDashboard(t, ts)
	b.Navigate(ts.AdminURL + "/ui/servers")
	waitText(t, b, "#redis-mode", "cluster")
	if n := browsertest.Eval[float64](b, `document.querySelectorAll("#redis-nodes tr[data-node]").length`); n != 3 {
		t.Fatalf("%v nodes listed, want the cluster's 3", n)
	}
	for i := 1; i <= 3; i++ {
		row := fmt.Sprintf("#redis-nodes tbody tr:nth-child(%d)", i)
		waitText(t, b, row+" td.role", "primary")
		waitText(t, b, row, "127.0.0.1:")
		waitText(t, b, row+" td:nth-of-type(2)", "B") // memory in KiB or MiB
		waitText(t, b, row+" td:nth-of-type(3)", "%") // the CPU share, after a refresh
		if c, err := strconv.Atoi(b.Text(row + " td:nth-of-type(4)")); err != nil || c < 1 {
			t.Fatalf("%s: clients %q, want a count with this server's connection", row, b.Text(row+" td:nth-of-type(4)"))
		}
	}
}
