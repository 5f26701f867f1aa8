package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/rooms"
	"github.com/sluicehq/sluice/server/tasks"
	"github.com/sluicehq/sluice/server/tenant"
)

// errorMap is how the server answers errors: the kernel's own cases (server/internal/httpapi) and the
// mapper of each system whose library's errors its routes return. Every request of both listeners
// carries it (wrap), so a system's error reads the same from its own routes, the dashboard and
// lmstfy's API. A new system with errors of its own adds its route package's Errors here.
func errorMap() httpapi.ErrorMap {
	return httpapi.ErrorMap{jobs.Errors, rooms.Errors, tasks.Errors}
}

// mount registers the routes a system package declares on a listener's mux, each behind what
// its description asks for: token authentication for namespace routes (Perms), the token's rate
// limit (Limit), and the native error writer.
func (s *Server) mount(mux *http.ServeMux, routes []httpapi.Route) {
	for _, rt := range routes {
		mux.HandleFunc(rt.Pattern, s.handler(rt))
	}
}

// handler is a route's handler with its authentication, rate limit and error rendering. A limit
// counts a token's requests, so a route with a Limit must name Perms: mounting one without is a
// mistake in the route package, caught when the server is built.
func (s *Server) handler(rt httpapi.Route) http.HandlerFunc {
	if rt.Limit != tenant.LimitNone && rt.Perms == nil {
		panic("server: route " + rt.Pattern + " has a rate limit but no token (set Perms)")
	}
	h := rt.Handler
	if rt.Limit != tenant.LimitNone {
		h = s.limiter.Wrap(rt.Limit, denyNative, h)
	}
	if rt.Perms != nil {
		h = s.authed(h, rt.AnyNamespace, rt.Perms...)
	}
	return httpapi.Adapt(h)
}

// denyNative is the native API's answer to a request over its token's limit: 429 rate_limited
// with Retry-After.
func denyNative(_ tenant.Token, dir tenant.LimitDir, sp tenant.Spent) error {
	return &httpapi.Error{
		Code: httpapi.CodeRateLimited, RetryAfter: sp.Result.RetryAfter,
		Message: fmt.Sprintf("the token's %s limit of %d per %ds is reached; retry in %s",
			dir, sp.Limit.Rate(dir), sp.Limit.Interval, sp.Result.RetryAfter.Round(time.Millisecond)),
	}
}
