package ui

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

var errNoRooms = &httpapi.Error{Code: httpapi.CodeNotFound, Message: "this server has no waiting rooms"}

func (u *UI) roomsLive(ctx context.Context) ([]string, live, error) {
	names, err := u.cfg.Rooms.Rooms(ctx)
	if err != nil {
		return nil, nil, err
	}
	l := live{}
	for _, name := range names {
		if err := u.roomLive(ctx, l, name); err != nil {
			return nil, nil, err
		}
	}
	return names, l, nil
}

// roomLive adds a room's live numbers to l, under "room/<name>:". eta is how long the last in
// line may wait at the pace of the last minutes' admissions.
func (u *UI) roomLive(ctx context.Context, l live, name string) error {
	room, err := u.cfg.Rooms.Room(name)
	if err != nil {
		return err
	}
	st, err := room.Stats(ctx)
	if err != nil {
		return err
	}
	k := "room/" + name
	l[k+":active"] = strconv.Itoa(st.Active)
	l[k+":max"] = strconv.Itoa(st.MaxActive)
	l[k+":waiting"] = strconv.Itoa(st.Waiting)
	l[k+":admitted"] = strconv.FormatFloat(st.AdmittedPerMinute, 'f', 1, 64) + "/min"
	l[k+":abandoned"] = strconv.FormatFloat(st.AbandonedPerMinute, 'f', 1, 64) + "/min"
	l[k+":wait"] = roundDur(st.MedianWait)
	switch {
	case st.Waiting == 0:
		l[k+":eta"] = "0s"
	case st.AdmittedPerMinute > 0:
		l[k+":eta"] = roundDur(time.Duration(float64(st.Waiting) / st.AdmittedPerMinute * float64(time.Minute)))
	default:
		l[k+":eta"] = "–" // nobody admitted lately: no pace to tell by
	}
	return nil
}

// roomPage shows one room: its live numbers with a chart of the line and the visitors inside,
// its upstream and its settings, and the capacity and reset actions.
func (u *UI) roomPage(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	cfg, err := u.cfg.Rooms.GetRoom(r.Context(), name)
	if err != nil {
		return err
	}
	l := live{}
	if err := u.roomLive(r.Context(), l, name); err != nil {
		return err
	}
	u.render(w, r, http.StatusOK, "room", "Room "+name, map[string]any{
		"Name": name, "Config": cfg, "Key": "room/" + name, "Live": l, "Poll": "/ui/api/rooms/" + url.PathEscape(name),
	})
	return nil
}

// setCapacity changes how many visitors a room admits at once; the other settings stay.
func (u *UI) setCapacity(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	n, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("max_active")))
	if err != nil || n < 1 {
		return httpapi.InvalidArg("max_active", "a whole number of visitors, at least 1")
	}
	cfg, err := u.cfg.Rooms.GetRoom(r.Context(), name)
	if err != nil {
		return err
	}
	cfg.MaxActive = n
	if _, err := u.cfg.Rooms.SetRoom(r.Context(), name, cfg); err != nil {
		return err
	}
	return done(w, r, roomBack(r, name), noteRoomCapacity, int64(n))
}

// resetRoom empties a room (every visitor leaves, counters start over); the form must repeat the
// room's name in "confirm".
func (u *UI) resetRoom(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if r.PostFormValue("confirm") != name {
		return httpapi.InvalidArg("confirm", "type the room's name (%s) to confirm the reset", name)
	}
	if _, err := u.cfg.Rooms.GetRoom(r.Context(), name); err != nil {
		return err
	}
	if err := u.cfg.Rooms.ResetRoom(r.Context(), name); err != nil {
		return err
	}
	return done(w, r, roomBack(r, name), noteRoomReset, 0)
}

// roomBack is where a room's action goes back to: the room's page when its form came from there
// (from=room), else the room list.
func roomBack(r *http.Request, name string) string {
	if r.PostFormValue("from") == "room" {
		return "/ui/rooms/" + url.PathEscape(name)
	}
	return "/ui/rooms"
}
