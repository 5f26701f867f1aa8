package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

func TestAdminAuthRequired(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := do(t, http.MethodGet, ts.AdminURL+"/v1/namespaces", "", nil)
	wantStatus(t, r, http.StatusUnauthorized, "unauthenticated")
	r = do(t, http.MethodGet, ts.AdminURL+"/v1/namespaces", "wrong", nil)
	wantStatus(t, r, http.StatusUnauthorized, "unauthenticated")
	r = ts.adminDo(t, http.MethodGet, "/nope", nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
	r = ts.public(t, http.MethodGet, "/nope", "", nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
	testwait.Until(t, 30*time.Second, "metrics", func() bool {
		return do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Status == http.StatusOK
	})
}
