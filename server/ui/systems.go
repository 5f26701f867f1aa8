package ui

// systemRoutes are the pages and actions of the optional systems, the request queue and the
// waiting rooms, by pattern (beside their lists, which systemPage mounts). Each answers that its
// system is not set up when the server has none.
func (u *UI) systemRoutes() map[string]handler {
	return map[string]handler{
		"POST /ui/endpoints/{name}":              u.setEndpoint,
		"GET /ui/endpoints/{name}":               u.endpointPage,
		"GET /ui/api/endpoints/{name}":           u.endpointJSON,
		"POST /ui/endpoints/{name}/tasks/cancel": u.cancelTasks,
		"GET /ui/tasks":                          u.taskPage,

		"GET /ui/rooms/{name}":           u.roomPage,
		"GET /ui/api/rooms/{name}":       u.roomJSON,
		"POST /ui/rooms/{name}/capacity": u.setCapacity,
		"POST /ui/rooms/{name}/reset":    u.resetRoom,
	}
}
