package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPanicIsRecovered(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	h := ts.srv.wrap("public", mux, false)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctxT(t), http.MethodGet, "/boom", nil))
	r := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	wantStatus(t, r, http.StatusInternalServerError, "internal")
	if r.Header.Get("X-Request-Id") == "" {
		t.Fatal("no request id on a recovered panic")
	}
}

// Every native route, fed odd bodies, answers with a registry error or success, never a 5xx.
func TestOddInputsNeverFail(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	bodies := []string{
		``, `null`, `"text"`, `123`, `[]`, `{}`, `{"a":`, "\xff\xfe", `{"payload": null}`,
		`{"payload": 1, "priority": 1e400}`, `{"jobs": [null]}`, `{"jobs": {}}`, `{"queues": [1]}`,
		`{"queues": ["` + strings.Repeat("q", 300) + `"]}`, `{"delivery": -1}`, `{"delivery": 9007199254740993}`,
		`{"ids": [""]}`, `{"limit": -5}`, `{"payload": {"deep": ` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `}}`,
		`{"payload": 1, "run_at": "0001-01-01T00:00:00Z"}`, `{"payload": 1, "attributes": {"": "x"}}`,
	}
	routes := ts.srv.publicRoutes()
	for _, rt := range routes {
		method, pattern, _ := strings.Cut(rt.Pattern, " ")
		path := strings.NewReplacer("{ns}", "shop", "{q}", "emails", "{id}", "01JD3M5R6W8X9Y0Z1A2B3C4D5E").Replace(pattern)
		for _, b := range bodies {
			r := ts.public(t, method, path, tok, b)
			if r.Status >= 500 {
				t.Errorf("%s %s with %.40q: %d %s", method, path, b, r.Status, r.Body)
			}
		}
	}
	for _, p := range []string{"/v1/ns/shop/queues/emails/jobs/" + strings.Repeat("x", 300), "/v1/ns/" + strings.Repeat("n", 300) + "/queues"} {
		if r := ts.public(t, http.MethodGet, p, tok, nil); r.Status >= 500 {
			t.Errorf("GET %s: %d %s", p, r.Status, r.Body)
		}
	}
}

// A client that sends its headers and then stalls in the body gets 400 once BodyReadTimeout has
// passed (it held its request open for good before), while a long-polling consume on the same
// server still waits its whole timeout: the deadline covers the body only.
func TestStalledBodyTimesOut(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.BodyReadTimeout = 300 * time.Millisecond })
	tok := ts.token(t, "shop")
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.PublicURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(conn, "POST /v1/ns/shop/queues/q/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"payload\"", tok)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	r := response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if st, err := ts.Queue.Stats(ctxT(t), "shop", "q"); err != nil || st.Published != 0 {
		t.Fatalf("the stalled publish published %d jobs (%v)", st.Published, err)
	}

	start := time.Now()
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, `{"queues":["empty"],"timeout":1}`)
	if r.Status != http.StatusOK || time.Since(start) < time.Second {
		t.Fatalf("a consume waiting 1 s answered %d %s after %s", r.Status, r.Body, time.Since(start))
	}
}
