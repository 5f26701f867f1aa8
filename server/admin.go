package server

import (
	"net/http"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

type createNamespaceRequest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// createNamespace is POST /v1/namespaces: 201 when created, 200 when it existed.
func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request) error {
	var req createNamespaceRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	if deleting, err := s.deletions.Deleting(r.Context(), req.Name); err != nil {
		return err
	} else if deleting {
		return tenant.ErrNamespaceDeleting
	}
	n, created, err := s.namespaces.Create(r.Context(), req.Name, req.Description)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpapi.WriteJSON(w, status, n)
	return nil
}

// listNamespaces is GET /v1/namespaces?cursor=&limit=: a page of the namespaces (one HSCAN), and
// next_cursor while there are more.
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	pr, err := httpapi.ReadPage(r, "namespaces", "")
	if err != nil {
		return err
	}
	list, next, err := s.namespaces.Page(r.Context(), pr.After, pr.Limit)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"namespaces": list, "next_cursor": httpapi.NextCursor("namespaces", "", next)})
	return nil
}

// getNamespace is GET /v1/namespaces/{ns}.
func (s *Server) getNamespace(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	d, deleting, err := s.deletions.Get(r.Context(), ns)
	if err != nil {
		return err
	}
	n, err := s.namespaces.Get(r.Context(), ns)
	switch {
	case deleting && err == nil:
		httpapi.WriteJSON(w, http.StatusOK, struct {
			tenant.Namespace
			Deleting tenant.Deletion `json:"deleting"`
		}{n, d})
		return nil
	case err != nil:
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, n)
	return nil
}

type createTokenRequest struct {
	Description string              `json:"description"`
	Permissions []tenant.Permission `json:"permissions"`
	MaxPriority *int                `json:"max_priority"`
	// Secret chooses the token's secret (tenant.CheckSecret's rules); absent: a random one.
	Secret *string `json:"secret"`
}

// tokenCreated is the answer to a token creation: the only time the secret is shown.
type tokenCreated struct {
	tenant.Token
	Secret string `json:"token"`
}

// createToken is POST /v1/namespaces/{ns}/tokens (the namespace is registered when new). A
// "secret" in the body chooses the secret, so clients that hold a token already keep it; one
// that is a token already answers 409 conflict.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	var req createTokenRequest
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	if req.Permissions != nil && len(req.Permissions) == 0 {
		return httpapi.InvalidArg("permissions", "name at least one of publish, consume, manage, tasks, tasks:delegate (leave it out for all but tasks:delegate)")
	}
	p := tenant.CreateTokenParams{
		Namespace: r.PathValue("ns"), Description: req.Description, Permissions: req.Permissions, MaxPriority: req.MaxPriority,
	}
	if req.Secret != nil {
		if *req.Secret == "" {
			return httpapi.InvalidArg("secret", "empty: leave it out for a random secret, or give one (%s)", tenant.SecretRule)
		}
		p.Secret = *req.Secret
	}
	secret, tok, err := s.tokens.Create(r.Context(), p)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, tokenCreated{Token: tok, Secret: secret})
	return nil
}

// listTokens is GET /v1/namespaces/{ns}/tokens (ids and settings; never secrets).
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	if !tenant.ValidName(ns) {
		return httpapi.InvalidArg("namespace", "%q %s", ns, tenant.NameRule)
	}
	pr, err := httpapi.ReadPage(r, "tokens", ns)
	if err != nil {
		return err
	}
	list, next, err := s.tokens.Page(r.Context(), ns, pr.After, pr.Limit)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"tokens": list, "next_cursor": httpapi.NextCursor("tokens", ns, next)})
	return nil
}

// revokeToken is DELETE /v1/namespaces/{ns}/tokens/{id} (the id, or the secret itself); the
// token's rate limit goes with it.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	tok, err := s.tokens.Find(r.Context(), ns, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.tokens.Revoke(r.Context(), ns, tok.ID); err != nil {
		return err
	}
	if err := s.limits.Remove(r.Context(), ns, tok.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// limitJSON is a token's rate limit on the native admin API: at most read consume requests and
// write publish requests per interval seconds (0: that direction is unlimited). lmstfy's
// /token/{ns}/{token}/limit routes show the same limit.
type limitJSON struct {
	Read     *int64 `json:"read"`
	Write    *int64 `json:"write"`
	Interval *int64 `json:"interval"`
}

// getTokenLimit is GET /v1/namespaces/{ns}/tokens/{id}/limit: 404 when the token has no limit.
func (s *Server) getTokenLimit(w http.ResponseWriter, r *http.Request) error {
	tok, err := s.tokens.Find(r.Context(), r.PathValue("ns"), r.PathValue("id"))
	if err != nil {
		return err
	}
	l, found, err := s.limits.Get(r.Context(), tok.Namespace, tok.ID)
	if err != nil {
		return err
	}
	if !found {
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: "the token has no rate limit"}
	}
	httpapi.WriteJSON(w, http.StatusOK, l)
	return nil
}

// setTokenLimit is PUT /v1/namespaces/{ns}/tokens/{id}/limit: set or replace the token's limit.
// Every instance applies it within a second.
func (s *Server) setTokenLimit(w http.ResponseWriter, r *http.Request) error {
	var req limitJSON
	if err := httpapi.DecodeBody(r, &req); err != nil {
		return err
	}
	var l tenant.Limit
	switch {
	case req.Interval == nil:
		return httpapi.InvalidArg("interval", "give the interval in whole seconds (at least 1)")
	case req.Read == nil && req.Write == nil:
		return httpapi.InvalidArg("read", "give read or write (or both): requests per interval")
	}
	l.Interval = *req.Interval
	if req.Read != nil {
		l.Read = *req.Read
	}
	if req.Write != nil {
		l.Write = *req.Write
	}
	if field, msg := l.Problem(); field != "" {
		return httpapi.InvalidArg(field, "%s", msg)
	}
	tok, err := s.tokens.Find(r.Context(), r.PathValue("ns"), r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := s.limits.Set(r.Context(), tok.Namespace, tok.ID, l, true); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, l)
	return nil
}

// deleteTokenLimit is DELETE /v1/namespaces/{ns}/tokens/{id}/limit: 204, also when the token had
// no limit.
func (s *Server) deleteTokenLimit(w http.ResponseWriter, r *http.Request) error {
	tok, err := s.tokens.Find(r.Context(), r.PathValue("ns"), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.limits.Remove(r.Context(), tok.Namespace, tok.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
