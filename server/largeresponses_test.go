package server

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// largeInFlight is how many large answers client is receiving now.
func (g *largeResponses) largeInFlight(client netip.Addr) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight[client]
}

// A client address receiving its bound of large answers (two clients that ask for a large job
// and do not read it) gets 429 too_many_large_responses with Retry-After for the next large one,
// while its small answers and another address's large ones go on; once those connections close,
// it gets large answers again. The same holds with proxy_rooms, where the public listener starts
// every connection in the room proxies' lean loop: an API route is not a proxy's, whose answers
// are the only ones left unbounded.
func TestConcurrentLargeResponsesPerClientAddress(t *testing.T) {
	t.Parallel()
	for _, proxyRooms := range []string{"", "*=shop"} {
		t.Run("proxy_rooms="+proxyRooms, func(t *testing.T) {
			t.Parallel()
			testConcurrentLargeResponses(t, proxyRooms)
		})
	}
}

func testConcurrentLargeResponses(t *testing.T, proxyRooms string) {
	ts := newTestServer(t, func(c *Config) {
		c.MaxBodyBytes, c.LargeResponseBytes, c.MaxLargeResponsesPerClient = 16<<20, 64<<10, 2
		c.ProxyRooms = proxyRooms
	})
	payload := bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 12<<20/3) // about 12 MiB, sent as base64
	res, err := ts.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: "big", Queue: "q", Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	token := ts.token(t, "big")
	path := "/v1/ns/big/queues/q/jobs/" + res.ID
	local := netip.MustParseAddr("127.0.0.1")
	conns := []net.Conn{askAndDoNotRead(t, ts, path, token), askAndDoNotRead(t, ts, path, token)}
	testwait.Until(t, 2*time.Minute, "both unread answers to hold a slot", func() bool { return ts.srv.large.largeInFlight(local) == 2 })

	r := do(t, http.MethodGet, ts.PublicURL+path, token, nil)
	wantStatus(t, r, http.StatusTooManyRequests, "too_many_large_responses")
	if r.Header.Get("Retry-After") == "" || len(r.Body) > 1024 {
		t.Fatalf("the refusal: Retry-After %q, %d bytes", r.Header.Get("Retry-After"), len(r.Body))
	}
	wantStatus(t, do(t, http.MethodGet, ts.PublicURL+"/v1/ns/big/queues/q", token, nil), http.StatusOK, "")
	// A consume leases before it answers: its large answer is not refused, or the job would stay
	// leased to nobody until its lease ended.
	r = do(t, http.MethodPost, ts.PublicURL+"/v1/ns/big/consume", token, map[string]any{"queues": []string{"q"}})
	wantStatus(t, r, http.StatusOK, "")
	if len(r.Body) < len(payload) {
		t.Fatalf("the consume's answer: %d bytes", len(r.Body))
	}

	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")},
	}).DialContext}}
	t.Cleanup(other.CloseIdleConnections)
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, ts.PublicURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n < int64(len(payload)) {
		t.Fatalf("another address: %d, %d bytes", resp.StatusCode, n)
	}

	for _, c := range conns {
		_ = c.Close()
	}
	testwait.Until(t, 2*time.Minute, "the closed connections' slots to come back", func() bool { return ts.srv.large.largeInFlight(local) == 0 })
	r = do(t, http.MethodGet, ts.PublicURL+path, token, nil)
	wantStatus(t, r, http.StatusOK, "")
	if len(r.Body) < len(payload) {
		t.Fatalf("the large answer after: %d bytes", len(r.Body))
	}
}
