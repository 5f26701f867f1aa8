package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// admin sends a JSON request to the admin API with the admin token.
func (f *fixture) admin(t *testing.T, method, path string, body any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, f.AdminURL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		out, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
}

func TestPublishWithCallback(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r)
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer recv.Close()
	f.admin(t, http.MethodPost, "/v1/namespaces/shop/callbacks/destinations", map[string]any{"prefix": recv.URL})
	f.admin(t, http.MethodPut, "/v1/namespaces/shop/callbacks/allow_private", map[string]any{"allow_private": true})

	wantFail(t, f.run(t, "publish", "--callback-method", "PUT", "orders", "{}"), exitUsage, "need --callback")
	id := publishedID(t, f.must(t, "publish", "--callback", recv.URL+"/close", "--callback-method", "PUT",
		"--callback-header", "X-Tenant=acme", "--callback-timeout", "5s", "--delay", "50ms", "orders", `{"order": 42}`))
	testwait.Until(t, time.Minute, "the callback", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	r := got[0]
	if r.Method != http.MethodPut || r.URL.Path != "/close" || r.Header.Get("X-Tenant") != "acme" ||
		r.Header.Get("webhook-id") != id || bodies[0] != `{"order":42}` {
		t.Fatalf("callback %s %s %v %q", r.Method, r.URL.Path, r.Header, bodies[0])
	}
}
