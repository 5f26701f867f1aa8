package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"

	"github.com/sluicehq/sluice/internal/benchkit/splitload"
	"github.com/sluicehq/sluice/internal/testkit/jaegertest"
	"github.com/sluicehq/sluice/internal/testkit/mysqltest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

func TestMain(m *testing.M) {
	splitload.MaybeClient() // the load client of a split benchmark (rooms_bench_test.go) exits here
	redistest.Main(m, mysqltest.Stop, jaegertest.Stop)
}

// testAdminToken is the test servers' admin token: strong enough for Config.validate.
const testAdminToken = "test-admin-token-4f9c2a7e1b"

// testServer is a real server on loopback listeners and a per-test Redis prefix.
type testServer struct {
	srv *Server
	env *redistest.Env
	// PublicURL and AdminURL are the base URLs of the two listeners (http://127.0.0.1:port).
	PublicURL string
	AdminURL  string
	// AdminToken is the admin token the server requires.
	AdminToken string
	// Queue is the server's queue client.
	Queue *queue.Client
	// Tokens is the server's token store.
	Tokens *tenant.TokenStore
}

// newTestServer starts a server on a fresh redistest prefix; opts adjust its Config before New.
// It stops when the test ends.
func newTestServer(t *testing.T, opts ...func(*Config)) *testServer {
	t.Helper()
	env := redistest.New(t)
	return newTestServerOn(t, env, opts...)
}

// newTestServerOn starts a server on env's Redis and prefix (two calls give two instances that
// share one Redis).
func newTestServerOn(t *testing.T, env *redistest.Env, opts ...func(*Config)) *testServer {
	t.Helper()
	cfg := Config{
		RedisURL:   env.URL,
		Prefix:     env.Prefix,
		AdminToken: testAdminToken,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Out:        io.Discard,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return startTestServer(t, cfg, env)
}

func startTestServer(t *testing.T, cfg Config, env *redistest.Env) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("New: %v", err)
	}
	pub, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adm, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pub, adm) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &testServer{
		srv:        srv,
		env:        env,
		PublicURL:  "http://" + pub.Addr().String(),
		AdminURL:   "http://" + adm.Addr().String(),
		AdminToken: srv.cfg.AdminToken,
		Queue:      srv.queue,
		Tokens:     srv.tokens,
	}
}

// token creates a token for namespace ns (registering it) with perms (none: all) and returns
// its secret.
func (ts *testServer) token(t *testing.T, ns string, perms ...tenant.Permission) string {
	t.Helper()
	p := tenant.CreateTokenParams{Namespace: ns, Permissions: perms}
	secret, _, err := ts.Tokens.Create(ctxT(t), p)
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	return secret
}

// response is a finished HTTP exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it is not JSON.
func (r response) JSON(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body %q is not the JSON expected: %v", r.Body, err)
	}
}

// ErrorCode returns the registry code of an error body ("" when there is none).
func (r response) ErrorCode() string {
	var b httpapi.ErrorBody
	_ = json.Unmarshal(r.Body, &b)
	return string(b.Error.Code)
}

// ErrorField returns the field an invalid_argument names.
func (r response) ErrorField() string {
	var b httpapi.ErrorBody
	_ = json.Unmarshal(r.Body, &b)
	return b.Error.Field
}

// do sends a request with a bearer token ("" for none) and a body: nil, a string or []byte
// (sent as is), or any other value (sent as JSON).
// noRedirects is the tests' HTTP client: a redirect is an answer to check, not to follow.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, method, url, token string, body any) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return exchange(t, noRedirects, req)
}

// exchange sends req with client c and reads the whole answer.
func exchange(t *testing.T, c *http.Client, req *http.Request) response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// sendWith sends a request with headers and a form (nil: no body) from client c.
func sendWith(t *testing.T, c *http.Client, method, target string, header map[string]string, form url.Values) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return exchange(t, c, req)
}

// waitOutTokenCache waits until every token lookup (and token limit) ts has cached so far has
// run out: a lookup is kept TokenCacheTTL from its start, so after this ts's next request sees a
// change made before the call. Waiting on the clock rather than polling with a deadline keeps
// "within TokenCacheTTL" exact on a loaded machine.
func (ts *testServer) waitOutTokenCache() {
	time.Sleep(ts.srv.cfg.TokenCacheTTL + 10*time.Millisecond)
}

// public sends a request to the public listener.
func (ts *testServer) public(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	return do(t, method, ts.PublicURL+path, token, body)
}

// adminDo sends a request to the admin listener with the admin token.
func (ts *testServer) adminDo(t *testing.T, method, path string, body any) response {
	t.Helper()
	return do(t, method, ts.AdminURL+path, ts.AdminToken, body)
}

// ctxT is a context for a test's calls that ends with the test. Its bound only stops a call that
// hangs: it covers the whole test, whose waits and browser steps add up on a loaded machine, so
// it is far longer than any of them.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// wantStatus fails the test unless the response has the status (and, for errors, the code).
func wantStatus(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.Status != status || (code != "" && r.ErrorCode() != code) {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}
