package server

import (
	"net/http"
	"strings"
	"testing"
)

// The overview's hint for a namespace without queues is a curl line to the public listener this
// server is bound to, not a fixed address.
func TestDashboardHintNamesThePublicListener(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.token(t, "shop")
	d := newDashboard(t, ts)
	d.login(t)
	r := d.get(t, "/ui/")
	wantPage(t, r, http.StatusOK, "No queues yet", ts.PublicURL+"/v1/ns/shop/queues/hello/jobs")
	if strings.Contains(string(r.Body), "127.0.0.1:7777") {
		t.Fatal("the hint names the default address, not the listener's")
	}
}
