package rooms

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/waitroom"
)

// fieldMap is a room's settings as a JSON object of field to value, with only the fields that are
// set: the form a JSON merge patch (RFC 7396) applies to.
type fieldMap map[string]json.RawMessage

// settingsOf is cfg in the API's JSON form (RoomView without its name and figures), with the
// bypass rules as a PUT body gives them (their secret included, which a view never shows), so
// that a patch keeps them.
func settingsOf(cfg waitroom.RoomConfig) (fieldMap, error) {
	m, err := fieldsOf(view("", cfg, nil))
	if err != nil {
		return nil, err
	}
	delete(m, "bypass")
	if b := cfg.Bypass; len(b.Paths)+len(b.UserAgents) > 0 || b.Secret != "" {
		raw, err := json.Marshal(b) //nolint:gosec // G117: the secret stays inside the server: a patch is merged into the stored settings, never answered
		if err != nil {
			return nil, err
		}
		m["bypass"] = raw
	}
	return m, nil
}

// fieldsOf marshals v (a JSON object) into a fieldMap, leaving out the null members and the
// room's name and figures, which are not settings.
func fieldsOf(v any) (fieldMap, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m fieldMap
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "name")
	delete(m, "stats")
	for k, v := range m {
		if string(v) == "null" {
			delete(m, k)
		}
	}
	return m, nil
}

// merge applies a JSON merge patch to cur: a member sets its field, a null member takes the field
// back to its default (for max_active, which has none, it is refused), an absent one keeps it.
// The result is checked as a PUT body is, so errors name the field.
func merge(cur waitroom.RoomConfig, patch fieldMap) (waitroom.RoomConfig, error) {
	m, err := settingsOf(cur)
	if err != nil {
		return waitroom.RoomConfig{}, err
	}
	for k, v := range patch {
		if string(v) == "null" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return waitroom.RoomConfig{}, err
	}
	var req RoomJSON
	if err := httpapi.DecodeJSON(data, &req); err != nil {
		return waitroom.RoomConfig{}, err
	}
	return req.Config()
}

// patch is PATCH /v1/rooms/{room}: a JSON merge patch of the room's settings. The fields sent
// change; the others stay as they are in Redis, even when another write changed them a moment
// before (the write is conditional on the version read, and retried).
func (a *API) patch(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("room")
	var p fieldMap
	if err := httpapi.DecodeBody(r, &p); err != nil {
		return err
	}
	if p == nil {
		// A null merge patch would replace the whole room with nothing (RFC 7396): refused, so
		// that a client's empty value never reads as "changed nothing" or "deleted".
		return httpapi.InvalidArg("body", "want a JSON object, got null")
	}
	cfg, err := a.client.UpdateRoom(r.Context(), name, func(cur waitroom.RoomUpdate) (waitroom.RoomUpdate, error) {
		if !cur.Found {
			return cur, waitroom.ErrRoomNotFound
		}
		cfg, err := merge(cur.Config, p)
		if err != nil {
			return cur, err
		}
		cur.Config = cfg
		return cur, a.keepsUpstream(name, cfg)
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, view(name, cfg, nil))
	return nil
}

// put is PUT /v1/rooms/{room}: 201 when the room was created, 200 when its settings were
// replaced (a change of max_active applies on every instance at the next arrival). Fields left
// out take their defaults; PATCH changes some fields only.
func (a *API) put(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("room")
	var req RoomJSON
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	cfg, err := req.Config()
	if err != nil {
		return err
	}
	if err := a.keepsUpstream(name, cfg); err != nil {
		return err
	}
	created := false
	cfg, err = a.client.UpdateRoom(r.Context(), name, func(cur waitroom.RoomUpdate) (waitroom.RoomUpdate, error) {
		created = !cur.Found
		cur.Config = cfg
		return cur, nil
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpapi.WriteJSON(w, status, view(name, cfg, nil))
	return nil
}

// keepsUpstream refuses settings without an upstream for a room this server's reverse proxy
// serves (ProxyHosts): its admitted visitors would get 502 from then on.
func (a *API) keepsUpstream(name string, cfg waitroom.RoomConfig) error {
	if cfg.Upstream != "" {
		return nil
	}
	for host, room := range a.cfg.ProxyHosts {
		if room == name {
			return &httpapi.Error{Code: httpapi.CodeConflict, Field: "upstream", Message: fmt.Sprintf(
				"room %s is served by the reverse proxy for host %s (proxy_rooms), so it needs an upstream; nothing changed", name, host)}
		}
	}
	return nil
}

// ApplyFileRooms creates or updates the rooms of the server's config file, one by one, in the
// order given. A room that does not exist is created with the file's settings. For a room that
// exists, only the fields the file changed since it was last applied change (a field the file no
// longer names goes back to its default); the others keep their live value, so restarting an
// instance never undoes a change made through the API. A room the file was never applied to (made
// through the API, or by a version that kept no record) takes every field the file names. The file's
// settings are recorded with the room (waitroom.RoomUpdate.Applied), in the same write.
func ApplyFileRooms(ctx context.Context, client *waitroom.Client, names []string, settings map[string]RoomJSON) error {
	for _, name := range names {
		file, err := fieldsOf(settings[name])
		if err != nil {
			return err
		}
		record, err := json.Marshal(file) // sorted keys: the same file gives the same record
		if err != nil {
			return err
		}
		_, err = client.UpdateRoom(ctx, name, func(cur waitroom.RoomUpdate) (waitroom.RoomUpdate, error) {
			next := waitroom.RoomUpdate{Applied: string(record)}
			var err error
			if !cur.Found {
				next.Config, err = settings[name].Config()
				return next, err
			}
			prev := fieldMap{}
			if cur.Applied != "" {
				if err := json.Unmarshal([]byte(cur.Applied), &prev); err != nil {
					prev = fieldMap{} // an unreadable record: as if none
				}
			}
			next.Config, err = merge(cur.Config, changes(prev, file))
			return next, err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// changes is the merge patch from settings prev to next: next's fields that differ, and null for
// the fields next no longer names.
func changes(prev, next fieldMap) fieldMap {
	out := fieldMap{}
	for k, v := range next {
		if string(prev[k]) != string(v) {
			out[k] = v
		}
	}
	for k := range prev {
		if _, ok := next[k]; !ok {
			out[k] = json.RawMessage("null")
		}
	}
	return out
}
