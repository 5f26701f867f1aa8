package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
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
