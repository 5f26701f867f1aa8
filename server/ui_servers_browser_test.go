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

// TestServersPageInChromium: a worker blocked in a consume is listed under this server with its
// token, address and queues while it waits, and stays listed (between consumes) after its job
// came; the Redis panel names the version, the memory, the operations per second and the
// persistence.
func TestServersPageInChromium(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.UISampleInterval = 50 * time.Millisecond })
	tok := ts.token(t, "shop")
	consumed := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, ts.PublicURL+"/v1/ns/shop/consume", strings.NewReader(`{"queues":["mail","sms"],"timeout":20}`))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
		consumed <- err
	}()

	b, _ := openDashboard(t, ts)
	b.Navigate(ts.AdminURL + "/ui/servers")
	row := `tr[data-consumer="shop|mail, sms"]`
	waitText(t, b, row, "waiting for jobs")
	if who := b.Text(row); !strings.Contains(who, "from 127.0.0.1") || !strings.Contains(who, "token ") {
		t.Fatalf("the consumer is shown as %q, want its token and address", who)
	}
	if n := browsertest.Eval[float64](b, `document.querySelectorAll("section.server").length`); n != 1 {
		t.Fatalf("%v servers listed, want this one", n)
	}

	wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/sms/jobs", tok, `{"payload":"hi"}`), 201, "")
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	waitText(t, b, row, "between consumes")

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
	consumed := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, ts.PublicURL+"/api/shop/orders,refunds?timeout=20", nil)
		if err == nil {
			req.Header.Set("X-Token", tok)
			var resp *http.Response
			if resp, err = http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
		consumed <- err
	}()

	b, _ := openDashboard(t, ts)
	b.Navigate(ts.AdminURL + "/ui/servers")
	row := `tr[data-consumer="shop|orders, refunds"][data-api="lmstfy"]`
	waitText(t, b, row, "waiting for jobs")
	if who := b.Text(row); !strings.Contains(who, "from 127.0.0.1") || !strings.Contains(who, "token ") || !strings.Contains(who, "lmstfy-compatible") {
		t.Fatalf("the consumer is shown as %q, want its token, address and API", who)
	}
	wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/refunds/jobs", tok, `{"payload":"hi"}`), 201, "")
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	waitText(t, b, row, "between consumes")
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
