package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// A schedule whose job has a callback: at each tick the server's deliverer calls the URL, signed.
func TestScheduledCallbackIsDelivered(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	recv := newHookReceiver(t)
	recv.setSecret(ts.allowCallbacks(t, recv.URL+"/hooks"))

	r := ts.public(t, http.MethodPut, "/v1/ns/shop/schedules/ping", tok, map[string]any{
		"every": 1, "job": map[string]any{"queue": "pings", "payload": map[string]any{"ping": 1},
			"callback": map[string]any{"url": recv.URL + "/hooks/ping", "timeout": 5}},
	})
	wantStatus(t, r, http.StatusOK, "")
	testwait.Until(t, 30*time.Second, "a scheduled callback", func() bool {
		bodies, _, _ := recv.calls()
		return len(bodies) > 0
	})
	bodies, ids, bad := recv.calls()
	if bodies[0] != `{"ping":1}` || ids[0] == "" || bad != 0 {
		t.Fatalf("receiver got %v %v, %d unverified", bodies, ids, bad)
	}
	var s scheduleJSON
	ts.public(t, http.MethodGet, "/v1/ns/shop/schedules/ping", tok, nil).JSON(t, &s)
	if s.Fires < 1 {
		t.Errorf("schedule after a delivered callback = %+v", s)
	}
}
