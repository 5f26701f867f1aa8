package adminguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// serve runs a real HTTP server that answers 403 and the refusal's reason when Check refuses, and
// 200 "ok" otherwise.
func serve(t *testing.T, cfg Config) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ref := Check(r, cfg); ref != nil {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, string(ref.Reason)+": "+ref.Message)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type req struct {
	method, path, host, origin, contentType, body string
	webhookID                                     string // a callback Sluice sent carries one
}

func send(t *testing.T, base string, q req) (int, string) {
	t.Helper()
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	r, err := http.NewRequest(q.method, base+q.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if q.host != "" {
		r.Host = q.host
	}
	if q.origin != "" {
		r.Header.Set("Origin", q.origin)
	}
	if q.contentType != "" {
		r.Header.Set("Content-Type", q.contentType)
	}
	if q.webhookID != "" {
		r.Header.Set("webhook-id", q.webhookID)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestCheckWithoutAdminToken(t *testing.T) {
	t.Parallel()
	base := serve(t, Config{LoopbackHostsOnly: true, OpenReads: map[string]bool{"/metrics": true}, FormPrefixes: []string{"/token/"}})
	for _, tc := range []struct {
		name   string
		req    req
		reason Reason // "" = served
	}{
		{"localhost", req{method: "GET", path: "/v1/namespaces", host: "localhost:7778"}, ""},
		{"localhost upper case no port", req{method: "GET", path: "/v1/namespaces", host: "LOCALHOST"}, ""},
		{"127.0.0.1", req{method: "GET", path: "/token/ns", host: "127.0.0.1:7778"}, ""},
		{"[::1] with port", req{method: "GET", path: "/token/ns", host: "[::1]:7778"}, ""},
		{"[::1] without port", req{method: "GET", path: "/token/ns", host: "[::1]"}, ""},
		{"rebinding name", req{method: "GET", path: "/v1/namespaces", host: "evil.example:7778"}, HostRefused},
		{"rebinding POST", req{method: "POST", path: "/v1/namespaces/ns/tokens", host: "evil.example:7778",
			origin: "http://evil.example:7778", contentType: "text/plain", body: `{"description":"x"}`}, HostRefused},
		{"localhost lookalike", req{method: "GET", path: "/", host: "localhost.evil.example"}, HostRefused},
		{"another loopback address", req{method: "GET", path: "/", host: "127.0.0.2:7778"}, HostRefused},
		{"trailing dot", req{method: "GET", path: "/", host: "localhost.:7778"}, HostRefused},
		{"foreign origin", req{method: "POST", path: "/token/ns?description=x", host: "127.0.0.1:7778",
			origin: "http://evil.example"}, OriginRefused},
		{"origin on another port", req{method: "DELETE", path: "/v1/namespaces/ns", host: "localhost:7778",
			origin: "http://localhost:3000"}, OriginRefused},
		{"null origin", req{method: "POST", path: "/token/ns?description=x", host: "localhost:7778", origin: "null"}, OriginRefused},
		{"foreign origin on a read", req{method: "GET", path: "/v1/namespaces", host: "localhost:7778",
			origin: "http://evil.example"}, OriginRefused},
		{"own origin", req{method: "POST", path: "/v1/namespaces", host: "localhost:7778", origin: "http://localhost:7778",
			contentType: "application/json", body: `{"name":"ns"}`}, ""},
		{"own origin over TLS proxy", req{method: "GET", path: "/v1/namespaces", host: "localhost:7778",
			origin: "https://localhost:7778"}, ""},
		{"text/plain POST", req{method: "POST", path: "/v1/namespaces/ns/tokens", host: "127.0.0.1:7778",
			contentType: "text/plain", body: `{"description":"x"}`}, ContentTypeRefused},
		{"text/plain with charset", req{method: "PUT", path: "/token/ns/t/limit", host: "127.0.0.1:7778",
			contentType: "text/plain;charset=UTF-8", body: `{}`}, ContentTypeRefused},
		{"untyped body", req{method: "POST", path: "/v1/namespaces", host: "127.0.0.1:7778", body: `{"name":"x"}`}, ContentTypeRefused},
		{"malformed type", req{method: "POST", path: "/v1/namespaces", host: "127.0.0.1:7778", contentType: "json;;", body: `{}`}, ContentTypeRefused},
		{"JSON POST", req{method: "POST", path: "/v1/namespaces", host: "127.0.0.1:7778",
			contentType: "application/json; charset=utf-8", body: `{"name":"x"}`}, ""},
		{"+json POST", req{method: "PUT", path: "/x", host: "127.0.0.1:7778", contentType: "application/merge-patch+json", body: `{}`}, ""},
		{"lmstfy form POST", req{method: "POST", path: "/token/ns", host: "localhost:7778",
			contentType: "application/x-www-form-urlencoded", body: "description=app&token=chosen-token-of-twenty-chars"}, ""},
		{"lmstfy multipart POST", req{method: "POST", path: "/token/ns", host: "localhost:7778",
			contentType: "multipart/form-data; boundary=x", body: "--x\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\napp\r\n--x--\r\n"}, ""},
		{"form on a JSON route", req{method: "POST", path: "/v1/namespaces/ns/tokens", host: "localhost:7778",
			contentType: "application/x-www-form-urlencoded", body: `{"description":"x"}`}, ContentTypeRefused},
		{"multipart on a JSON route", req{method: "POST", path: "/v1/namespaces", host: "localhost:7778",
			contentType: "multipart/form-data; boundary=x", body: "--x--\r\n"}, ContentTypeRefused},
		{"lmstfy query POST without body", req{method: "POST", path: "/token/ns?description=app", host: "localhost:7778"}, ""},
		{"DELETE without body", req{method: "DELETE", path: "/token/ns/abc", host: "localhost:7778"}, ""},
		{"metrics read from any name", req{method: "GET", path: "/metrics", host: "prometheus-target:7778", origin: "http://evil.example"}, ""},
		{"metrics write is checked", req{method: "POST", path: "/metrics", host: "evil.example:7778"}, HostRefused},
		{"a callback", req{method: "POST", path: "/v1/namespaces/ns/tokens", host: "127.0.0.1:7778",
			contentType: "application/json", body: `{"task_id":"x"}`, webhookID: "01M8G5MS50EFZKYMJBGW04HQPZ"}, CallbackRefused},
		{"a callback reading metrics", req{method: "GET", path: "/metrics", host: "127.0.0.1:7778", webhookID: "x"}, CallbackRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body := send(t, base, tc.req)
			if tc.reason == "" {
				if status != http.StatusOK {
					t.Fatalf("status %d %q, want served", status, body)
				}
				return
			}
			if status != http.StatusForbidden || !strings.HasPrefix(body, string(tc.reason)+": ") {
				t.Fatalf("status %d %q, want 403 %s", status, body, tc.reason)
			}
		})
	}
}

func TestCheckWithAdminToken(t *testing.T) {
	t.Parallel()
	// With an admin token any Host is served (the token is what a rebinding page lacks), but
	// foreign origins and cross-site body types are still refused.
	base := serve(t, Config{})
	for _, tc := range []struct {
		name   string
		req    req
		reason Reason
	}{
		{"any host", req{method: "GET", path: "/v1/namespaces", host: "sluice.internal:7778"}, ""},
		{"own origin behind a proxy", req{method: "POST", path: "/v1/namespaces", host: "sluice.example.com",
			origin: "https://sluice.example.com", contentType: "application/json", body: "{}"}, ""},
		{"foreign origin", req{method: "POST", path: "/v1/namespaces", host: "sluice.example.com",
			origin: "https://evil.example", contentType: "application/json", body: "{}"}, OriginRefused},
		{"text/plain", req{method: "POST", path: "/v1/namespaces", host: "sluice.example.com",
			contentType: "text/plain", body: "{}"}, ContentTypeRefused},
		{"a callback", req{method: "DELETE", path: "/v1/namespaces/shop", host: "sluice.example.com", webhookID: "x"}, CallbackRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body := send(t, base, tc.req)
			if tc.reason == "" && status != http.StatusOK {
				t.Fatalf("status %d %q, want served", status, body)
			}
			if tc.reason != "" && (status != http.StatusForbidden || !strings.HasPrefix(body, string(tc.reason)+": ")) {
				t.Fatalf("status %d %q, want 403 %s", status, body, tc.reason)
			}
		})
	}
}

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "localhost:1": true, "LocalHost:7778": true, "127.0.0.1": true, "127.0.0.1:80": true,
		"[::1]": true, "[::1]:7778": true, "::1": true,
		"": false, "0.0.0.0:7778": false, "127.1": false, "[::ffff:127.0.0.1]:7778": false, "evil.example": false,
		"localhost.": false, "[::1]x": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
