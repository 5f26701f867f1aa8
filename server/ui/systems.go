package ui

import (
	"context"
	"net/http"
)

// systemRoutes are the pages and actions of the optional systems, the request queue and the
// waiting rooms, by pattern (beside their lists, which systemPage mounts). Each answers that its
// system is not set up when the server has none.
func (u *UI) systemRoutes() map[string]handler {
	relay := func(h handler) handler { return needs(u.cfg.Relay != nil, errNoRelay, h) }
	rooms := func(h handler) handler { return needs(u.cfg.Rooms != nil, errNoRooms, h) }
	return map[string]handler{
		"POST /ui/endpoints/{name}":              relay(u.setEndpoint),
		"GET /ui/endpoints/{name}":               relay(u.endpointPage),
		"GET /ui/api/endpoints/{name}":           relay(u.endpointJSON),
		"POST /ui/endpoints/{name}/tasks/cancel": relay(u.cancelTasks),
		"GET /ui/tasks":                          u.taskPage, // it says itself when there is no request queue

		"GET /ui/rooms/{name}":           rooms(u.roomPage),
		"GET /ui/api/rooms/{name}":       rooms(itemJSON(u.roomLive)),
		"POST /ui/rooms/{name}/capacity": rooms(u.setCapacity),
		"POST /ui/rooms/{name}/reset":    rooms(u.resetRoom),
	}
}

// needs serves h when its system is set up (enabled), else answers off.
func needs(enabled bool, off error, h handler) handler {
	if enabled {
		return h
	}
	return func(http.ResponseWriter, *http.Request) error { return off }
}

// itemJSON is the JSON twin of an item page of an optional system (an endpoint, a room): the
// live numbers read (endpointLive, roomLive) puts in for the {name} of the path, which the page
// polls.
func itemJSON(read func(ctx context.Context, l live, name string) error) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		l := live{}
		if err := read(r.Context(), l, r.PathValue("name")); err != nil {
			return err
		}
		return writeLive(w, l)
	}
}
