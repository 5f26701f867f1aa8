package tasks

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// Config is what the task and endpoint routes need from the server that mounts them.
type Config struct {
	// Relay is the request queue client.
	Relay *relay.Client
	// MaxWait caps the long-poll of GET /v1/tasks/{id}?wait=. Default 60s.
	MaxWait time.Duration
	// Drain ends when a graceful shutdown starts: long-polls return at once. Required.
	Drain context.Context
	// MaxEndpoints bounds the endpoints GET /v1/endpoints reports with live stats. Default 1000.
	MaxEndpoints int
	// AllowPrivateTargets is the server's relay_allow_private: without it, PUT refuses an
	// endpoint whose target_url is (or resolves only to) a loopback or private address, which
	// the dispatcher would refuse to call. Default false.
	AllowPrivateTargets bool
	// DefaultMaxPriority caps the priority of tasks submitted with a token that has no
	// max_priority (0..255). Default 0.
	DefaultMaxPriority int
}

// API serves the request queue's routes.
type API struct {
	cfg   Config
	relay *relay.Client
}

// New returns the routes on cfg's relay client.
func New(cfg Config) *API {
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 60 * time.Second
	}
	if cfg.MaxEndpoints <= 0 {
		cfg.MaxEndpoints = 1000
	}
	return &API{cfg: cfg, relay: cfg.Relay}
}

// Routes are the public routes: tasks and the permit check. The task routes take a token of any
// namespace with the tasks permission (AnyNamespace); the permit check takes no token (the
// permit is the credential), so nginx's auth_request can call it.
func (a *API) Routes() []httpapi.Route {
	tasks := []tenant.Permission{tenant.PermTasks}
	return []httpapi.Route{
		{Pattern: "POST /v1/tasks", Handler: a.submit, Perms: tasks, AnyNamespace: true, Limit: tenant.LimitWrite},
		{Pattern: "GET /v1/tasks/{id}", Handler: a.get, Perms: tasks, AnyNamespace: true},
		{Pattern: "DELETE /v1/tasks/{id}", Handler: a.cancel, Perms: tasks, AnyNamespace: true},
		{Pattern: "POST /v1/tasks/{id}/cancel", Handler: a.cancel, Perms: tasks, AnyNamespace: true},
		{Pattern: "POST /v1/tasks/{id}/done", Handler: a.done, Perms: tasks, AnyNamespace: true},
		{Pattern: "GET /v1/permits/check", Handler: a.checkPermit},
	}
}

// AdminRoutes are the endpoint routes of the admin listener (the admin token guards them).
func (a *API) AdminRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /v1/endpoints", Handler: a.listEndpoints},
		{Pattern: "PUT /v1/endpoints/{name}", Handler: a.putEndpoint},
		{Pattern: "GET /v1/endpoints/{name}", Handler: a.getEndpoint},
		{Pattern: "DELETE /v1/endpoints/{name}", Handler: a.deleteEndpoint},
	}
}
