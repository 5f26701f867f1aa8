package server

import "net/http"

// mountLmstfyPublic registers the lmstfy-compatible public routes (/api/...).
func (s *Server) mountLmstfyPublic(mux *http.ServeMux) {}

// mountLmstfyAdmin registers the lmstfy-compatible admin routes (/token/..., /limits, ...).
func (s *Server) mountLmstfyAdmin(mux *http.ServeMux) {}
