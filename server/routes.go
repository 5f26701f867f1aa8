package server

// publicRoutes are the native routes of the public listener (the lmstfy-compatible ones are
// mounted by mountLmstfyPublic). docs/openapi.yaml describes exactly these and adminRoutes; a
// test keeps them in step.
func (s *Server) publicRoutes() []route {
	const q = "/v1/ns/{ns}/queues/{q}"
	any := []Permission{PermPublish, PermConsume, PermManage}
	return append(s.healthRoutes(),
		route{"POST " + q + "/jobs", s.authed(s.limited(limitWrite, s.publish), PermPublish)},
		route{"GET " + q + "/jobs/{id}", s.authed(s.getJob, any...)},
		route{"DELETE " + q + "/jobs/{id}", s.authed(s.deleteJob, PermPublish, PermManage)},
		route{"POST " + q + "/jobs/{id}/ack", s.authed(s.ack, PermConsume)},
		route{"POST " + q + "/jobs/{id}/nack", s.authed(s.nack, PermConsume)},
		route{"POST " + q + "/jobs/{id}/touch", s.authed(s.touch, PermConsume)},
		route{"POST /v1/ns/{ns}/consume", s.authed(s.limited(limitRead, s.consume), PermConsume)},
		route{"GET /v1/ns/{ns}/queues", s.authed(s.listQueues, any...)},
		route{"GET " + q, s.authed(s.getQueue, any...)},
		route{"DELETE " + q, s.authed(s.deleteQueue, PermManage)},
		route{"POST " + q + "/pause", s.authed(s.pauseQueue, PermManage)},
		route{"POST " + q + "/resume", s.authed(s.resumeQueue, PermManage)},
		route{"GET " + q + "/dead", s.authed(s.listDead, any...)},
		route{"POST " + q + "/dead/respawn", s.authed(s.respawnDead, PermManage)},
		route{"DELETE " + q + "/dead", s.authed(s.deleteDead, PermManage)},
	)
}

// adminRoutes are the native routes of the admin listener (plus GET /metrics, and lmstfy's admin
// routes mounted by mountLmstfyAdmin). The admin middleware checks the admin token.
func (s *Server) adminRoutes() []route {
	return append(s.healthRoutes(),
		route{"POST /v1/namespaces", api(s.createNamespace)},
		route{"GET /v1/namespaces", api(s.listNamespaces)},
		route{"GET /v1/namespaces/{ns}", api(s.getNamespace)},
		route{"DELETE /v1/namespaces/{ns}", api(s.deleteNamespace)},
		route{"POST /v1/namespaces/{ns}/tokens", api(s.createToken)},
		route{"GET /v1/namespaces/{ns}/tokens", api(s.listTokens)},
		route{"DELETE /v1/namespaces/{ns}/tokens/{id}", api(s.revokeToken)},
		route{"GET /v1/namespaces/{ns}/tokens/{id}/limit", api(s.getTokenLimit)},
		route{"PUT /v1/namespaces/{ns}/tokens/{id}/limit", api(s.setTokenLimit)},
		route{"DELETE /v1/namespaces/{ns}/tokens/{id}/limit", api(s.deleteTokenLimit)},
	)
}
