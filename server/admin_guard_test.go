package server

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// browserDo sends a request to the admin listener as a browser (or a page's script) would: with
// its own Host, and the headers given (Origin, Content-Type, ...).
func browserDo(t *testing.T, method, rawURL, host, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, rawURL, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Without an admin token (the quick start on a developer's machine) the admin listener answers
// only what a tool on the machine sends: a web page can neither rebind a name to 127.0.0.1 nor
// post to it cross-site.
func TestAdminGuardWithoutAdminToken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.AdminToken = "" })
	u, err := url.Parse(ts.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	evil := "evil.example:" + port
	tokensOf := func(ns string) int {
		toks, err := ts.Tokens.List(ctxT(t), ns)
		if err != nil {
			t.Fatal(err)
		}
		return len(toks)
	}

	// The request of the issue: a page on evil.example, resolved to 127.0.0.1, posts text/plain.
	r := browserDo(t, "POST", ts.AdminURL+"/v1/namespaces/ns/tokens", evil, `{"description":"x"}`,
		"Origin", "http://"+evil, "Content-Type", "text/plain")
	wantStatus(t, r, http.StatusForbidden, "admin_host_refused")
	if !strings.Contains(string(r.Body), "DNS rebinding") {
		t.Errorf("the refusal does not say why: %s", r.Body)
	}
	// Rebound reads (of tokens, of lmstfy's token list) and lmstfy's token route are refused too.
	for _, path := range []string{"/v1/namespaces", "/v1/namespaces/ns/tokens", "/token/ns", "/limits", "/ui/"} {
		wantStatus(t, browserDo(t, "GET", ts.AdminURL+path, evil, ""), http.StatusForbidden, "admin_host_refused")
	}
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/token/ns?description=x", evil, ""), http.StatusForbidden, "admin_host_refused")
	wantStatus(t, browserDo(t, "GET", ts.AdminURL+"/v1/namespaces", "localhost.evil.example:"+port, ""), http.StatusForbidden, "admin_host_refused")

	// A cross-site request to the real loopback name carries the page's Origin.
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces/ns/tokens", "127.0.0.1:"+port, `{"description":"x"}`,
		"Origin", "http://evil.example", "Content-Type", "application/json"), http.StatusForbidden, "admin_origin_refused")
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/token/ns?description=x", "localhost:"+port, "",
		"Origin", "null"), http.StatusForbidden, "admin_origin_refused")
	wantStatus(t, browserDo(t, "DELETE", ts.AdminURL+"/v1/namespaces/ns", "localhost:"+port, "",
		"Origin", "http://localhost:3000"), http.StatusForbidden, "admin_origin_refused")
	// A body a page may send without asking (text/plain, or none) is refused even without Origin;
	// so is a form on the native JSON routes.
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces/ns/tokens", "127.0.0.1:"+port, `{"description":"x"}`,
		"Content-Type", "text/plain"), http.StatusForbidden, "admin_content_type_refused")
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces", "127.0.0.1:"+port, `{"name":"ns"}`),
		http.StatusForbidden, "admin_content_type_refused")
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces", "127.0.0.1:"+port, `{"name":"ns"}`,
		"Content-Type", "application/x-www-form-urlencoded"), http.StatusForbidden, "admin_content_type_refused")
	wantStatus(t, browserDo(t, "PUT", ts.AdminURL+"/token/ns/x/limit", "127.0.0.1:"+port, `{"read":1,"interval":1}`,
		"Content-Type", "text/plain;charset=UTF-8"), http.StatusForbidden, "admin_content_type_refused")
	if n := tokensOf("ns"); n != 0 {
		t.Fatalf("refused requests created %d tokens", n)
	}

	// Tools pass: every loopback name with any port, JSON bodies, lmstfy's forms and queries.
	for _, host := range []string{"localhost:" + port, "LOCALHOST:" + port, "127.0.0.1:" + port, "[::1]:" + port, "localhost"} {
		wantStatus(t, browserDo(t, "GET", ts.AdminURL+"/v1/namespaces", host, ""), http.StatusOK, "")
	}
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces/ns/tokens", "127.0.0.1:"+port, `{"description":"json"}`,
		"Content-Type", "application/json"), http.StatusCreated, "")
	// The dashboard's own pages send their own origin.
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces/ns/tokens", "localhost:"+port, `{"description":"same origin"}`,
		"Origin", "http://localhost:"+port, "Content-Type", "application/json; charset=utf-8"), http.StatusCreated, "")
	r = browserDo(t, "POST", ts.AdminURL+"/token/ns", "localhost:"+port, "description=lmstfy+form",
		"Content-Type", "application/x-www-form-urlencoded")
	if r.Status != http.StatusCreated {
		t.Fatalf("lmstfy form POST: %d %s", r.Status, r.Body)
	}
	if r := browserDo(t, "POST", ts.AdminURL+"/token/ns?description=lmstfy+query", "127.0.0.1:"+port, ""); r.Status != http.StatusCreated {
		t.Fatalf("lmstfy query POST without a body: %d %s", r.Status, r.Body)
	}
	if n := tokensOf("ns"); n != 4 {
		t.Fatalf("ns has %d tokens, want the 4 made by tools", n)
	}
	// Prometheus reads /metrics (and health checks read /healthz) under any name.
	for _, path := range []string{"/metrics", "/healthz"} {
		if r := browserDo(t, "GET", ts.AdminURL+path, "sluice-host:"+port, "", "Origin", "http://evil.example"); r.Status != http.StatusOK {
			t.Fatalf("GET %s under another name: %d %s", path, r.Status, r.Body)
		}
	}
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/metrics", evil, ""), http.StatusForbidden, "admin_host_refused")
	// The public listener is not the admin one: its clients come from anywhere.
	if r := browserDo(t, "GET", ts.PublicURL+"/healthz", evil, "", "Origin", "http://evil.example"); r.Status != http.StatusOK {
		t.Fatalf("public /healthz from a foreign name: %d", r.Status)
	}
}

// With an admin token any Host is served (a rebinding page cannot know the token), but a foreign
// Origin and a text/plain body are still refused: a browser holding the credentials would lend
// them to any page.
func TestAdminGuardWithAdminToken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	bearer := "Bearer " + ts.AdminToken
	wantStatus(t, browserDo(t, "GET", ts.AdminURL+"/v1/namespaces", "sluice.internal:7778", "", "Authorization", bearer), http.StatusOK, "")
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces", "sluice.example.com", `{"name":"ns"}`,
		"Authorization", bearer, "Origin", "https://sluice.example.com", "Content-Type", "application/json"), http.StatusCreated, "")
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces", "sluice.example.com", `{"name":"ns2"}`,
		"Authorization", bearer, "Origin", "https://evil.example", "Content-Type", "application/json"), http.StatusForbidden, "admin_origin_refused")
	wantStatus(t, browserDo(t, "POST", ts.AdminURL+"/v1/namespaces", "sluice.example.com", `{"name":"ns3"}`,
		"Authorization", bearer, "Content-Type", "text/plain"), http.StatusForbidden, "admin_content_type_refused")
}
