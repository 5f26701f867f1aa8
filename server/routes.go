package server

import (
	"github.com/sluicehq/sluice/internal/httpapi"
)

// publicRoutes are the native routes of the public listener: the health checks and the job
// routes (server/jobs). The lmstfy-compatible ones are mounted by lmstfy.API.MountPublic.
// docs/openapi.yaml describes exactly these and adminRoutes; a test keeps them in step.
func (s *Server) publicRoutes() []httpapi.Route {
	return append(append(s.healthRoutes(), s.jobs.Routes()...), s.tasks.Routes()...)
}

// adminRoutes are the native routes of the admin listener (plus GET /metrics, and lmstfy's admin
// routes mounted by lmstfy.API.MountAdmin). The admin middleware checks the admin token.
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
	)
	return append(routes, s.tasks.AdminRoutes()...)
}
