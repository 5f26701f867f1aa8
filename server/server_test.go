package server

import (
	"net/http"
	"testing"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, base := range []string{ts.PublicURL, ts.AdminURL} {
		for _, path := range []string{"/healthz", "/readyz"} {
			r := do(t, http.MethodGet, base+path, "", nil)
			wantStatus(t, r, http.StatusOK, "")
			if r.Header.Get("X-Request-Id") == "" {
				t.Fatalf("%s%s: no X-Request-Id", base, path)
			}
		}
	}
}
