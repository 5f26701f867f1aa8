package ui

import (
	"context"
	"net/http"
	"strconv"
	"strings"

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
		room, err := u.cfg.Rooms.Room(name)
		if err != nil {
			return nil, nil, err
		}
		st, err := room.Stats(ctx)
		if err != nil {
			return nil, nil, err
		}
		k := "room/" + name
		l[k+":active"] = strconv.Itoa(st.Active)
		l[k+":max"] = strconv.Itoa(st.MaxActive)
		l[k+":waiting"] = strconv.Itoa(st.Waiting)
		l[k+":admitted"] = strconv.FormatFloat(st.AdmittedPerMinute, 'f', 1, 64) + "/min"
		l[k+":wait"] = roundDur(st.MedianWait)
	}
	return names, l, nil
}

// setCapacity changes how many visitors a room admits at once; the other settings stay.
func (u *UI) setCapacity(w http.ResponseWriter, r *http.Request) error {
	if u.cfg.Rooms == nil {
		return errNoRooms
	}
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
	return done(w, r, "/ui/rooms", noteRoomCapacity, int64(n))
}

// resetRoom empties a room (every visitor leaves, counters start over); the form must repeat the
// room's name in "confirm".
func (u *UI) resetRoom(w http.ResponseWriter, r *http.Request) error {
	if u.cfg.Rooms == nil {
		return errNoRooms
	}
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
	return done(w, r, "/ui/rooms", noteRoomReset, 0)
}
