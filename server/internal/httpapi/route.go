package httpapi

import (
	"context"
	"net/http"

	"github.com/sluicehq/sluice/server/tenant"
)

// Handler is a route's handler: it writes its success response and returns errors, which one
// writer renders (WriteError for native routes).
type Handler func(w http.ResponseWriter, r *http.Request) error

// Route is one route a system package declares; the server mounts it behind its middleware,
// authentication and rate limits, and renders its errors.
type Route struct {
	// Pattern is the net/http ServeMux pattern ("POST /v1/ns/{ns}/queues/{q}/jobs").
	Pattern string
	// Handler serves the route. On an authenticated route, tenant.FromContext(r.Context())
	// returns the request's token.
	Handler Handler
	// Perms, when not nil, makes the route a namespace route: the request needs a bearer token of
	// the namespace in the path's {ns} carrying at least one of them. nil: no token (the admin
	// listener's routes, which the admin token guards, and health checks).
	Perms []tenant.Permission
	// AnyNamespace makes a route with Perms take a token of any namespace: its path has no {ns},
	// and the handler confines what it touches to the token's namespace (tasks carry the
	// namespace that submitted them).
	AnyNamespace bool
	// Limit is the direction of the token's rate limit the route counts against (LimitNone:
	// none). A request that does not answer the direction's success status is refunded.
	Limit tenant.LimitDir
}

// Adapt turns a Handler into an http.HandlerFunc that renders its error with WriteError.
func Adapt(h Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			WriteError(w, r, err)
		}
	}
}

// WithDrain returns a context that also ends when drain does (the server's graceful shutdown),
// for requests that block (consumes): they return at once instead of holding the shutdown up.
func WithDrain(ctx, drain context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(drain, cancel)
	return ctx, func() { stop(); cancel() }
}
