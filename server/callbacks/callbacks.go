package callbacks

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/sluicehq/sluice/callback"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// Config is what the callback settings routes need from the server.
type Config struct {
	// Store keeps the settings. Required.
	Store *callback.Store
	// Namespace returns nil when the namespace exists, else its not-found error: settings are
	// only kept for namespaces that exist. Required.
	Namespace func(ctx context.Context, ns string) error
}

// API serves the callback settings routes.
type API struct{ cfg Config }

// New returns the routes on cfg's store.
func New(cfg Config) *API { return &API{cfg: cfg} }

// Routes are the admin routes (the admin token guards the whole listener, so Perms is nil).
func (a *API) Routes() []httpapi.Route {
	const base = "/v1/namespaces/{ns}/callbacks"
	return []httpapi.Route{
		{Pattern: "GET " + base, Handler: a.settings(a.get)},
		{Pattern: "POST " + base + "/secrets", Handler: a.settings(a.rotateSecret)},
		{Pattern: "DELETE " + base + "/secrets/previous", Handler: a.settings(a.retireSecret)},
		{Pattern: "POST " + base + "/destinations", Handler: a.settings(a.addDestination)},
		{Pattern: "DELETE " + base + "/destinations", Handler: a.settings(a.removeDestination)},
		{Pattern: "PUT " + base + "/allow_private", Handler: a.settings(a.setAllowPrivate)},
	}
}

// SettingsJSON is a namespace's callback settings on the wire.
type SettingsJSON struct {
	// Secrets sign deliveries, newest first (at most two).
	Secrets []string `json:"secrets"`
	// Destinations are the allowed URL prefixes, sorted.
	Destinations []string `json:"destinations"`
	// AllowPrivate lets callbacks reach private and loopback addresses.
	AllowPrivate bool `json:"allow_private"`
}

// settingsChange is what one route does to the settings of namespace ns (GET: nothing); it returns
// the status to answer with.
type settingsChange func(r *http.Request, ns string) (status int, err error)

// settings serves a route of the path's namespace's settings: the namespace must exist, change
// runs, and the answer is the settings as they now are. Errors go through apiError.
func (a *API) settings(change settingsChange) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		ns := r.PathValue("ns")
		if err := a.cfg.Namespace(r.Context(), ns); err != nil {
			return err
		}
		status, err := change(r, ns)
		if err != nil {
			return apiError(err)
		}
		return a.writeSettings(w, r, ns, status)
	}
}

// writeSettings answers with the namespace's settings as they now are.
func (a *API) writeSettings(w http.ResponseWriter, r *http.Request, ns string, status int) error {
	s, err := a.cfg.Store.Settings(r.Context(), ns)
	if err != nil {
		return apiError(err)
	}
	out := SettingsJSON{Secrets: s.Secrets, Destinations: s.Destinations, AllowPrivate: s.AllowPrivate}
	if out.Secrets == nil {
		out.Secrets = []string{}
	}
	if out.Destinations == nil {
		out.Destinations = []string{}
	}
	slices.Sort(out.Destinations)
	httpapi.WriteJSON(w, status, out)
	return nil
}

// get is GET /v1/namespaces/{ns}/callbacks: the settings, unchanged.
func (a *API) get(*http.Request, string) (int, error) { return http.StatusOK, nil }

type rotateRequest struct {
	// Secret is the new secret ("whsec_" + base64); empty: the server makes one.
	Secret string `json:"secret"`
}

// rotateSecret is POST /v1/namespaces/{ns}/callbacks/secrets: the new secret signs from now on,
// with the previous one still live until it is retired.
func (a *API) rotateSecret(r *http.Request, ns string) (int, error) {
	var req rotateRequest
	if r.ContentLength != 0 {
		if err := httpapi.DecodeBody(r, &req); err != nil {
			return 0, err
		}
	}
	_, err := a.cfg.Store.RotateSecret(r.Context(), ns, req.Secret)
	return http.StatusCreated, err
}

// retireSecret is DELETE /v1/namespaces/{ns}/callbacks/secrets/previous: only the newest secret
// signs from now on.
func (a *API) retireSecret(r *http.Request, ns string) (int, error) {
	return http.StatusOK, a.cfg.Store.RetireSecret(r.Context(), ns)
}

type destinationRequest struct {
	Prefix string `json:"prefix"`
}

// addDestination is POST /v1/namespaces/{ns}/callbacks/destinations.
func (a *API) addDestination(r *http.Request, ns string) (int, error) {
	var req destinationRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return 0, err
	}
	if req.Prefix == "" {
		return 0, httpapi.InvalidArg("prefix", "is required: an absolute http or https URL prefix")
	}
	_, err := a.cfg.Store.AddDestination(r.Context(), ns, req.Prefix)
	return http.StatusOK, err
}

// removeDestination is DELETE /v1/namespaces/{ns}/callbacks/destinations?prefix=...
func (a *API) removeDestination(r *http.Request, ns string) (int, error) {
	prefix := r.URL.Query().Get("prefix")
	if prefix == "" {
		return 0, httpapi.InvalidArg("prefix", "name the prefix to remove in the query (?prefix=...)")
	}
	removed, err := a.cfg.Store.RemoveDestination(r.Context(), ns, prefix)
	if err == nil && !removed {
		err = &httpapi.Error{Code: httpapi.CodeNotFound, Message: "the namespace has no callback destination " + prefix}
	}
	return http.StatusOK, err
}

type allowPrivateRequest struct {
	AllowPrivate *bool `json:"allow_private"`
}

// setAllowPrivate is PUT /v1/namespaces/{ns}/callbacks/allow_private.
func (a *API) setAllowPrivate(r *http.Request, ns string) (int, error) {
	var req allowPrivateRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return 0, err
	}
	if req.AllowPrivate == nil {
		return 0, httpapi.InvalidArg("allow_private", "is required: true or false")
	}
	return http.StatusOK, a.cfg.Store.SetAllowPrivate(r.Context(), ns, *req.AllowPrivate)
}

// apiError turns the store's input errors into the registry's; the rest (Redis, and errors already
// the registry's) go to the server's mapping.
func apiError(err error) error {
	switch {
	case errors.Is(err, callback.ErrTooManyDestinations):
		return &httpapi.Error{Code: httpapi.CodeConflict, Message: err.Error()}
	default:
		return err
	}
}
