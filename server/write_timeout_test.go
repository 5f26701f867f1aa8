package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
)

// A client that asks for a large answer and then does not read it loses its connection at the
// write timeout: the handler ends, and the server goes on serving others. Before, the handler
// stayed blocked in its write for as long as the client kept the connection open.
func TestSlowReaderIsCutAtTheWriteTimeout(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.WriteTimeout, c.MaxBodyBytes = 3*time.Second, 8<<20 })
	ctx := ctxT(t)
	payload := bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 7<<20/3) // about 7 MiB, sent as base64
	res, err := ts.Queue.Publish(ctx, queue.PublishParams{Namespace: "slow", Queue: "big", Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	token := ts.token(t, "slow")

	conn := askAndDoNotRead(t, ts, "/v1/ns/slow/queues/big/jobs/"+res.ID, token)
	testwait.Until(t, 30*time.Second, "the request to start", func() bool { return publicInFlight(t, ts) > 0 })
	testwait.Until(t, 30*time.Second, "the handler of the unread answer to end", func() bool { return publicInFlight(t, ts) == 0 })

	got, _ := io.Copy(io.Discard, conn) // what the kernel had taken in, then the close
	if want := int64(len(payload)) * 4 / 3; got >= want {
		t.Fatalf("the slow reader got %d bytes, want the connection cut before the %d of the payload", got, want)
	}
	r := do(t, http.MethodGet, ts.PublicURL+"/v1/ns/slow/queues/big/jobs/"+res.ID, token, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("another client after the cut: %d", r.Status)
	}
}

// askAndDoNotRead sends a GET of path on a connection whose small receive buffer (set before
// connecting) cannot take a large answer in, and then reads nothing: the server's write of the
// answer blocks until the write timeout or the close.
func askAndDoNotRead(t *testing.T, ts *testServer, path, token string) net.Conn {
	t.Helper()
	conn := dialSmallBuffer(t, ts)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer %s\r\n\r\n", path, token)
	return conn
}

// dialSmallBuffer connects to ts's public listener with a small receive buffer (set before
// connecting), closed when the test ends.
func dialSmallBuffer(t *testing.T, ts *testServer) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(ctxT(t), "tcp", strings.TrimPrefix(ts.PublicURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// A long poll waits longer than the write timeout and still gets its whole answer: the write
// timeout bounds writing an answer, not the wait before it starts (native and lmstfy consumes).
func TestLongPollOutlastsTheWriteTimeout(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.WriteTimeout = time.Second })
	token := ts.token(t, "wait")
	r := do(t, http.MethodPost, ts.PublicURL+"/v1/ns/wait/consume", token, map[string]any{"queues": []string{"q"}, "timeout": 3})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"jobs":[]`) {
		t.Fatalf("native consume waiting 3 s with a 1 s write timeout: %d %s, want 200 and no jobs", r.Status, r.Body)
	}
	r = sendWith(t, noRedirects, http.MethodGet, ts.PublicURL+"/api/wait/q?timeout=3", map[string]string{"X-Token": token}, nil)
	if r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), "no job") {
		t.Fatalf("lmstfy consume waiting 3 s with a 1 s write timeout: %d %s, want lmstfy's 404 no job", r.Status, r.Body)
	}
}

// publicInFlight reads sluice_http_requests_in_flight of ts's public listener.
func publicInFlight(t *testing.T, ts *testServer) float64 {
	t.Helper()
	var m dto.Metric
	if err := ts.srv.metrics.inflight.WithLabelValues("public").Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
