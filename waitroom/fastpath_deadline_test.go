package waitroom_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// The lean loop leaves the idle wait's deadline in place from one request to the next
// (fastpath_deadline.go). These tests hold it to the bounds net/http keeps.

// deadlineSite serves a room's proxy to an upstream that answers /slow after wait and streams
// /stream in three parts wait apart, with the given timeouts.
func deadlineSite(t *testing.T, wait time.Duration, hs *http.Server) (addr, cookie string, site *proxySite, ended chan struct{}) {
	t.Helper()
	ended = make(chan struct{}, 2)
	quit := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			time.Sleep(wait)
		case "/silent": // one part, then nothing until the request ends
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: part\n\n")
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				ended <- struct{}{}
			case <-time.After(20 * time.Second):
			}
			return
		case "/hang": // no answer until the request ends; ended hears of its start and its end
			ended <- struct{}{}
			select {
			case <-r.Context().Done():
				ended <- struct{}{}
			case <-quit: // the test is over
			}
			return
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				if i > 0 {
					time.Sleep(wait)
				}
				_, _ = io.WriteString(w, "data: part\n\n")
				http.NewResponseController(w).Flush()
			}
			return
		}
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(quit) }) // before up.Close, which waits for the handlers
	c := newClient(t, redistest.New(t), waitroom.Config{})
	room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 10, Upstream: up.URL})
	site = serveProxy(t, room, hs)
	return strings.TrimPrefix(site.URL, "http://"), admittedCookie(t, site.URL), site, ended
}

// An answer that takes longer than IdleTimeout (a slow upstream, a stream) reaches the visitor
// whole, and the connection serves the next request: the idle wait's deadline, left in place
// during the answer, does not cut it.
func TestLeanAnswerOutlastsTheIdleDeadline(t *testing.T) {
	t.Parallel()
	const idle = 150 * time.Millisecond
	addr, cookie, site, _ := deadlineSite(t, 2*idle, &http.Server{IdleTimeout: idle, ReadHeaderTimeout: time.Second})
	lean0 := site.Server.Stats().LeanRequests
	conn := dialLean(t, addr, cookie, "/first")
	br := bufio.NewReader(conn)
	for _, path := range []string{"/slow", "/stream", "/after"} {
		if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: shop\r\nCookie: "+cookie+"\r\n\r\n"); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		want := "ok " + path
		if path == "/stream" {
			want = strings.Repeat("data: part\n\n", 3)
		}
		if err != nil || res.StatusCode != http.StatusOK || string(body) != want {
			t.Fatalf("%s: %d %q %v, want 200 %q", path, res.StatusCode, body, err, want)
		}
	}
	if got := site.Server.Stats().LeanRequests - lean0; got != 4 {
		t.Fatalf("the lean loop served %d requests, want 4", got)
	}
}

// A header that comes in pieces is bounded by ReadHeaderTimeout, not IdleTimeout, also on a
// connection that served a request before: the server lets it go long before the idle bound.
func TestLeanPartialHeaderIsBoundedByReadHeaderTimeout(t *testing.T) {
	t.Parallel()
	addr, cookie, _, _ := deadlineSite(t, 0, &http.Server{IdleTimeout: time.Hour, ReadHeaderTimeout: 200 * time.Millisecond})
	conn := dialLean(t, addr, cookie, "/first")
	if _, err := io.WriteString(conn, "GET /second HTTP/1.1\r\nHost: shop\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	rest, err := io.ReadAll(conn) // an answer to the broken request, if any, then the close
	if err != nil {
		t.Fatalf("the connection with a partial header was not closed: %v (read %q)", err, rest)
	}
}

// A visitor who leaves a silent stream after the idle wait's deadline passed still ends the
// upstream request: the lean loop's watch of the client is not cut by that deadline.
func TestLeanStreamNoticesTheClientLeavingAfterTheIdleDeadline(t *testing.T) {
	t.Parallel()
	const idle = 100 * time.Millisecond
	addr, cookie, _, ended := deadlineSite(t, 0, &http.Server{IdleTimeout: idle, ReadHeaderTimeout: time.Second})
	conn := dialLean(t, addr, cookie, "/first")
	if _, err := io.WriteString(conn, "GET /silent HTTP/1.1\r\nHost: shop\r\nCookie: "+cookie+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("silent stream: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("silent stream: %d", res.StatusCode)
	}
	if _, err := res.Body.Read(make([]byte, 12)); err != nil {
		t.Fatalf("the stream's first part: %v", err)
	}
	time.Sleep(3 * idle) // past the idle wait's deadline
	conn.Close()
	select {
	case <-ended:
	case <-time.After(15 * time.Second):
		t.Fatal("the upstream request went on after the visitor left")
	}
}

// Close ends a lean request that waits for its upstream's answer: the proxy's upstream
// connection is cut, so the upstream sees its request end.
func TestLeanCloseEndsTheWaitForTheUpstream(t *testing.T) {
	t.Parallel()
	addr, cookie, site, ended := deadlineSite(t, 0, &http.Server{IdleTimeout: time.Minute, ReadHeaderTimeout: time.Second})
	conn := dialLean(t, addr, cookie, "/first")
	lean0 := site.Server.Stats().LeanRequests
	if _, err := io.WriteString(conn, "GET /hang HTTP/1.1\r\nHost: shop\r\nCookie: "+cookie+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-ended // the request reached the upstream
	_ = site.Server.Close()
	select {
	case <-ended:
	case <-time.After(15 * time.Second):
		t.Fatal("the upstream request went on after Close")
	}
	testwait.Until(t, 10*time.Second, "the lean loop to count the request", func() bool {
		return site.Server.Stats().LeanRequests == lean0+1
	})
}
