package server

import (
	"github.com/sluicehq/sluice/internal/httpapi"
	"github.com/sluicehq/sluice/internal/tenant"
)

// publicRoutes are the native routes of the public listener (the lmstfy-compatible ones are
// mounted by mountLmstfyPublic). docs/openapi.yaml describes exactly these and adminRoutes; a
// test keeps them in step.
func (s *Server) publicRoutes() []httpapi.Route {
	const q = "/v1/ns/{ns}/queues/{q}"
	anyPerm := []tenant.Permission{tenant.PermPublish, tenant.PermConsume, tenant.PermManage}
	return append(s.healthRoutes(),
		httpapi.Route{Pattern: "POST " + q + "/jobs", Handler: s.publish, Perms: []tenant.Permission{tenant.PermPublish}, Limit: tenant.LimitWrite},
		httpapi.Route{Pattern: "GET " + q + "/jobs/{id}", Handler: s.getJob, Perms: anyPerm},
		httpapi.Route{Pattern: "DELETE " + q + "/jobs/{id}", Handler: s.deleteJob, Perms: []tenant.Permission{tenant.PermPublish, tenant.PermManage}},
		httpapi.Route{Pattern: "POST " + q + "/jobs/{id}/ack", Handler: s.ack, Perms: []tenant.Permission{tenant.PermConsume}},
		httpapi.Route{Pattern: "POST " + q + "/jobs/{id}/nack", Handler: s.nack, Perms: []tenant.Permission{tenant.PermConsume}},
		httpapi.Route{Pattern: "POST " + q + "/jobs/{id}/touch", Handler: s.touch, Perms: []tenant.Permission{tenant.PermConsume}},
		httpapi.Route{Pattern: "POST /v1/ns/{ns}/consume", Handler: s.consume, Perms: []tenant.Permission{tenant.PermConsume}, Limit: tenant.LimitRead},
		httpapi.Route{Pattern: "GET /v1/ns/{ns}/queues", Handler: s.listQueues, Perms: anyPerm},
		httpapi.Route{Pattern: "GET " + q, Handler: s.getQueue, Perms: anyPerm},
		httpapi.Route{Pattern: "DELETE " + q, Handler: s.deleteQueue, Perms: []tenant.Permission{tenant.PermManage}},
		httpapi.Route{Pattern: "POST " + q + "/pause", Handler: s.pauseQueue, Perms: []tenant.Permission{tenant.PermManage}},
		httpapi.Route{Pattern: "POST " + q + "/resume", Handler: s.resumeQueue, Perms: []tenant.Permission{tenant.PermManage}},
		httpapi.Route{Pattern: "GET " + q + "/dead", Handler: s.listDead, Perms: anyPerm},
		httpapi.Route{Pattern: "POST " + q + "/dead/respawn", Handler: s.respawnDead, Perms: []tenant.Permission{tenant.PermManage}},
		httpapi.Route{Pattern: "DELETE " + q + "/dead", Handler: s.deleteDead, Perms: []tenant.Permission{tenant.PermManage}},
	)
}

// adminRoutes are the native routes of the admin listener (plus GET /metrics, and lmstfy's admin
// routes mounted by mountLmstfyAdmin). The admin middleware checks the admin token.
func (s *Server) adminRoutes() []httpapi.Route {
	return append(s.healthRoutes(),
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
}
