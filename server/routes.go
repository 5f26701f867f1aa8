package server

// publicRoutes are the native routes of the public listener (the lmstfy-compatible ones are
// mounted by mountLmstfyPublic). docs/openapi.yaml describes exactly these; a test keeps them in
// step.
func (s *Server) publicRoutes() []route {
	return s.healthRoutes()
}

// adminRoutes are the native routes of the admin listener (plus /metrics, and lmstfy's admin
// routes mounted by mountLmstfyAdmin).
func (s *Server) adminRoutes() []route {
	return s.healthRoutes()
}
