package server

import (
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// publicRoutes are the native routes of the public listener: the health checks, the job routes
// (server/jobs), the waiting rooms' visitor routes (server/rooms; the rooms' proxied hosts are
// mounted by rooms.API.MountProxies) and the request queue's tasks and permits (server/tasks). The lmstfy-compatible ones are mounted by lmstfy.API.MountPublic.
// docs/openapi.yaml describes exactly these and adminRoutes; a test keeps them in step.
func (s *Server) publicRoutes() []httpapi.Route {
	routes := append(append(s.healthRoutes(), s.jobs.Routes()...), s.rooms.PublicRoutes()...)
	routes = append(routes, s.quotaPublicRoutes()...)
	return append(routes, s.tasks.Routes()...)
}

// adminRoutes are the native routes of the admin listener (plus GET /metrics, and lmstfy's admin
// routes mounted by lmstfy.API.MountAdmin), with waiting rooms (server/rooms), request-queue
// endpoints (server/tasks) and callback settings (server/callbacks). The
// admin middleware checks the admin token.
func (s *Server) adminRoutes() []httpapi.Route {
	routes := append(s.healthRoutes(),
		httpapi.Route{Pattern: "POST /v1/namespaces", Handler: s.createNamespace},
		httpapi.Route{Pattern: "GET /v1/namespaces", Handler: s.listNamespaces},
		httpapi.Route{Pattern: "GET /v1/namespaces/{ns}", Handler: s.getNamespace},
		httpapi.Route{Pattern: "DELETE /v1/namespaces/{ns}", Handler: s.deleteNamespace},
		httpapi.Route{Pattern: "POST /v1/namespaces/{ns}/tokens", Handler: s.createToken},
		httpapi.Route{Pattern: "GET /v1/namespaces/{ns}/tokens", Handler: s.listTokens},
		httpapi.Route{Pattern: "DELETE /v1/namespaces/{ns}/tokens/{id}", Handler: s.revokeToken},
		httpapi.Route{Pattern: "GET /v1/namespaces/{ns}/tokens/{id}/limit", Handler: s.getTokenLimit},
		httpapi.Route{Pattern: "PUT /v1/namespaces/{ns}/tokens/{id}/limit", Handler: s.setTokenLimit},
		httpapi.Route{Pattern: "DELETE /v1/namespaces/{ns}/tokens/{id}/limit", Handler: s.deleteTokenLimit},
		httpapi.Route{Pattern: "DELETE /v1/dashboard/sessions", Handler: s.endDashboardSessions},
	)
	routes = append(routes, s.quotaAdminRoutes()...)
	routes = append(routes, s.rooms.AdminRoutes()...)
	routes = append(routes, s.tasks.AdminRoutes()...)
	return append(routes, s.callbacks.Routes()...)
}
