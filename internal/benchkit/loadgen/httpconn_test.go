package loadgen

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestHTTPConnFraming(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789", 2000) // past net/http's buffer: sent chunked
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/base/echo":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(r.Method + " " + r.Header.Get("Authorization") + " " + r.Header.Get("Content-Type") + " " + string(body)))
		case "/base/big":
			_, _ = w.Write([]byte(big[:1000]))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(big[1000:]))
		case "/base/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/base/close":
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte("bye"))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	target, err := newEndpoint(srv.URL + "/base/")
	if err != nil {
		t.Fatal(err)
	}
	target.authLines = "Authorization: Bearer tok\r\n"
	c := &httpConn{target: target}
	defer c.close()
	ctx := t.Context()

	check := func(method, path, ctype string, body []byte, wantStatus int, wantBody string) {
		t.Helper()
		status, err := c.do(ctx, method, path, ctype, body)
		if err != nil || status != wantStatus || c.body.String() != wantBody {
			t.Fatalf("%s %s = %d %q, %v; want %d %q", method, path, status, clipS(c.body.String()), err, wantStatus, clipS(wantBody))
		}
	}
	check("POST", "/echo", "application/json", []byte(`{"a":1}`), 201, `POST Bearer tok application/json {"a":1}`)
	check("GET", "/big", "", nil, 200, big)
	check("DELETE", "/empty", "", nil, 204, "")
	check("GET", "/echo", "", nil, 201, "GET Bearer tok  ")
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for keep-alive requests, want 1", n)
	}
	// The server closes the connection after this answer; the next request dials again.
	check("GET", "/close", "", nil, 200, "bye")
	check("GET", "/empty", "", nil, 204, "")
	// The server drops idle connections: the request is sent again on a new one.
	srv.CloseClientConnections()
	check("PUT", "/echo", "text/plain", []byte("x"), 201, "PUT Bearer tok text/plain x")
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

func clipS(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
