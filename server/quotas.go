package server

import (
	"net/http"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// quotaAnswer is a namespace's quotas, the ones it set itself (the others are the server's
// defaults) and what it holds now.
type quotaAnswer struct {
	Namespace string               `json:"namespace"`
	Quotas    tenant.Quotas        `json:"quotas"`
	Settings  tenant.QuotaSettings `json:"settings"`
	Usage     usage                `json:"usage"`
}

// usage is what a namespace holds: its queues, tokens and schedules, each read with one O(1) command, and
// what its queues store, as last measured (queue.Client.Usage; measured_at says when).
type usage struct {
	Queues      int64     `json:"queues"`
	Tokens      int64     `json:"tokens"`
	Schedules   int64     `json:"schedules"`
	StoredJobs  int64     `json:"stored_jobs"`
	StoredBytes int64     `json:"stored_bytes"`
	MeasuredAt  time.Time `json:"measured_at"`
}

// quotaAdminRoutes read and set a namespace's quotas on the admin listener.
func (s *Server) quotaAdminRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "GET /v1/namespaces/{ns}/quotas", Handler: s.getQuotas},
		{Pattern: "PUT /v1/namespaces/{ns}/quotas", Handler: s.setQuotas},
	}
}

// quotaPublicRoutes: a namespace's token of any permission reads its own quotas and usage (the
// namespace route's authentication refuses another namespace's token); no public route sets
// them.
func (s *Server) quotaPublicRoutes() []httpapi.Route {
	return []httpapi.Route{{Pattern: "GET /v1/ns/{ns}/usage", Handler: s.getQuotas, Perms: tenant.KnownPermissions}}
}

// quotasOf reads namespace ns's quotas, settings and usage.
func (s *Server) quotasOf(r *http.Request, ns string) (quotaAnswer, error) {
	if !tenant.ValidName(ns) {
		return quotaAnswer{}, httpapi.InvalidArg("namespace", "%q %s", ns, tenant.NameRule)
	}
	ctx := r.Context()
	a := quotaAnswer{Namespace: ns}
	var err error
	if a.Settings, err = s.quotas.Settings(ctx, ns); err != nil {
		return a, err
	}
	if a.Quotas, err = s.quotas.Of(ctx, ns); err != nil {
		return a, err
	}
	if a.Usage.Queues, err = s.queue.QueueCount(ctx, ns); err != nil {
		return a, err
	}
	if a.Usage.Tokens, err = s.tokens.Count(ctx, ns); err != nil {
		return a, err
	}
	if a.Usage.Schedules, err = s.queue.Schedules().Count(ctx, ns); err != nil {
		return a, err
	}
	stored, err := s.queue.Usage(ctx, ns)
	a.Usage.StoredJobs, a.Usage.StoredBytes, a.Usage.MeasuredAt = stored.Jobs, stored.Bytes, stored.MeasuredAt.UTC()
	return a, err
}

// getQuotas is GET /v1/namespaces/{ns}/quotas (admin) and GET /v1/ns/{ns}/usage (the
// namespace's own tokens).
func (s *Server) getQuotas(w http.ResponseWriter, r *http.Request) error {
	a, err := s.quotasOf(r, r.PathValue("ns"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, a)
	return nil
}

// setQuotas is PUT /v1/namespaces/{ns}/quotas: the body's quotas replace the namespace's settings
// (a quota left out or null takes the server's default; 0 is none). The namespace must exist.
func (s *Server) setQuotas(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	var req tenant.QuotaSettings
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	if _, err := s.namespaces.Get(r.Context(), ns); err != nil {
		return err
	}
	if _, err := s.quotas.Set(r.Context(), ns, req); err != nil {
		return err
	}
	return s.getQuotas(w, r)
}
