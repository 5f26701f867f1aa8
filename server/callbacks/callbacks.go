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
		{Pattern: "GET " + base, Handler: a.get},
		{Pattern: "POST " + base + "/secrets", Handler: a.rotateSecret},
		{Pattern: "DELETE " + base + "/secrets/previous", Handler: a.retireSecret},
		{Pattern: "POST " + base + "/destinations", Handler: a.addDestination},
		{Pattern: "DELETE " + base + "/destinations", Handler: a.removeDestination},
		{Pattern: "PUT " + base + "/allow_private", Handler: a.setAllowPrivate},
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

// namespace checks that the path's namespace exists and returns it.
func (a *API) namespace(r *http.Request) (string, error) {
	ns := r.PathValue("ns")
	return ns, a.cfg.Namespace(r.Context(), ns)
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

// get is GET /v1/namespaces/{ns}/callbacks.
func (a *API) get(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.namespace(r)
	if err != nil {
		return err
	}
	return a.writeSettings(w, r, ns, http.StatusOK)
}

type rotateRequest struct {
	// Secret is the new secret ("whsec_" + base64); empty: the server makes one.
	Secret string `json:"secret"`
}

// rotateSecret is POST /v1/namespaces/{ns}/callbacks/secrets: the new secret signs from now on,
// with the previous one still live until it is retired.
func (a *API) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.namespace(r)
	if err != nil {
		return err
	}
	var req rotateRequest
	if r.ContentLength != 0 {
		if err := httpapi.DecodeBody(r, &req); err != nil {
			return err
		}
	}
	if _, err := a.cfg.Store.RotateSecret(r.Context(), ns, req.Secret); err != nil {
		return apiError(err)
	}
	return a.writeSettings(w, r, ns, http.StatusCreated)
}

// retireSecret is DELETE /v1/namespaces/{ns}/callbacks/secrets/previous: only the newest secret
// signs from now on.
func (a *API) retireSecret(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.namespace(r)
	if err != nil {
		return err
	}
	if err := a.cfg.Store.RetireSecret(r.Context(), ns); err != nil {
		return apiError(err)
	}
	return a.writeSettings(w, r, ns, http.StatusOK)
}

type destinationRequest struct {
	Prefix string `json:"prefix"`
}

// addDestination is POST /v1/namespaces/{ns}/callbacks/destinations.
func (a *API) addDestination(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.namespace(r)
	if err != nil {
		return err
	}
	var req destinationRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	if req.Prefix == "" {
		return httpapi.InvalidArg("prefix", "is required: an absolute http or https URL prefix")
	}
	if _, err := a.cfg.Store.AddDestination(r.Context(), ns, req.Prefix); err != nil {
		return apiError(err)
	}
	return a.writeSettings(w, r, ns, http.StatusOK)
}

// removeDestination is DELETE /v1/namespaces/{ns}/callbacks/destinations?prefix=...
func (a *API) removeDestination(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.namespace(r)
	if err != nil {
		return err
	}
	prefix := r.URL.Query().Get("prefix")
	if prefix == "" {
		return httpapi.InvalidArg("prefix", "name the prefix to remove in the query (?prefix=...)")
	}
	removed, err := a.cfg.Store.RemoveDestination(r.Context(), ns, prefix)
	if err != nil {
		return apiError(err)
	}
	if !removed {
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: "the namespace has no callback destination " + prefix}
	}
	return a.writeSettings(w, r, ns, http.StatusOK)
}

type allowPrivateRequest struct {
	AllowPrivate *bool `json:"allow_private"`
}

// setAllowPrivate is PUT /v1/namespaces/{ns}/callbacks/allow_private.
func (a *API) setAllowPrivate(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.namespace(r)
	if err != nil {
		return err
	}
	var req allowPrivateRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	if req.AllowPrivate == nil {
		return httpapi.InvalidArg("allow_private", "is required: true or false")
	}
	if err := a.cfg.Store.SetAllowPrivate(r.Context(), ns, *req.AllowPrivate); err != nil {
		return apiError(err)
	}
	return a.writeSettings(w, r, ns, http.StatusOK)
}

// apiError turns the store's input errors into the registry's; the rest (Redis) go to the
// server's mapping.
func apiError(err error) error {
	switch {
	case errors.Is(err, callback.ErrTooManyDestinations):
		return &httpapi.Error{Code: httpapi.CodeConflict, Message: err.Error()}
	default:
		return err
	}
}
