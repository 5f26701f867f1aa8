package server

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/sluicehq/sluice/waitroom"
)

// roomWithLine makes room "sale" (capacity 1, the given upstream) and lets three visitors arrive:
// one inside, two waiting.
func roomWithLine(t *testing.T, ts *testServer, upstream string) *waitroom.Room {
	t.Helper()
	if _, err := ts.srv.waitroom.SetRoom(ctxT(t), "sale", waitroom.RoomConfig{MaxActive: 1, NewUsersPerMinute: 60, QueueTimeout: 3 * time.Minute, Upstream: upstream}); err != nil {
		t.Fatal(err)
	}
	room, err := ts.srv.waitroom.Room("sale")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1", "v2", "v3"} {
		if _, err := room.Arrive(ctxT(t), v); err != nil {
			t.Fatal(err)
		}
	}
	return room
}

// A room's page shows its line, the visitors inside, the pace and ETA, its upstream and settings;
// its actions come back to it; an unknown room is a 404.
func TestDashboardRoomPage(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	d := newDashboard(t, ts)
	d.login(t)
	roomWithLine(t, ts, "http://shop.internal:8080/")
	wantPage(t, d.get(t, "/ui/rooms"), http.StatusOK, `href="/ui/rooms/sale"`)
	wantPage(t, d.get(t, "/ui/rooms/sale"), http.StatusOK, `data-live="room/sale:waiting">2<`, `data-live="room/sale:active">1<`,
		`data-live="room/sale:admitted">`, `data-live="room/sale:eta">`, "http://shop.internal:8080/", "at most 60 admitted a minute",
		"3m0s without a status poll", `data-series="room/sale:waiting room/sale:active"`, "−5 min")
	var l map[string]string
	d.get(t, "/ui/api/rooms/sale").JSON(t, &l)
	if l["room/sale:waiting"] != "2" || l["room/sale:active"] != "1" || l["room/sale:eta"] == "" {
		t.Fatalf("room JSON: %v", l)
	}
	wantPage(t, d.get(t, "/ui/rooms/nope"), http.StatusNotFound)
	wantStatus(t, d.get(t, "/ui/api/rooms/nope"), http.StatusNotFound, "not_found")
	wantRedirect(t, d.post(t, "/ui/rooms/sale/capacity", url.Values{"max_active": {"4"}, "from": {"room"}}), "/ui/rooms/sale?n=4&note=room_capacity")
	wantPage(t, d.get(t, "/ui/rooms/sale"), http.StatusOK, "admits 4 at once")
}
