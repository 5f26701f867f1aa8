package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// authorize authenticates the bearer token of a native request and checks that it belongs to the
// namespace of the path (unless anyNS: a route without {ns}) and carries at least one of anyOf.
func (s *Server) authorize(r *http.Request, anyNS bool, anyOf ...tenant.Permission) (tenant.Token, error) {
	secret := bearer(r)
	if secret == "" {
		return tenant.Token{}, &httpapi.Error{Code: httpapi.CodeUnauthenticated, Message: "send the namespace token as Authorization: Bearer <token>"}
	}
	tok, err := s.tokens.Authenticate(r.Context(), secret)
	if err != nil {
		return tenant.Token{}, err
	}
	if ns := r.PathValue("ns"); !anyNS && tok.Namespace != ns {
		return tenant.Token{}, &httpapi.Error{Code: httpapi.CodePermissionDenied, Message: "the token belongs to namespace " + tok.Namespace + ", not " + ns}
	}
	if !slices.ContainsFunc(anyOf, tok.Allows) {
		names := make([]string, len(anyOf))
		for i, p := range anyOf {
			names[i] = string(p)
		}
		return tenant.Token{}, &httpapi.Error{Code: httpapi.CodePermissionDenied, Message: "the token lacks the " + strings.Join(names, " or ") + " permission"}
	}
	return tok, nil
}

// authed wraps a namespace route's handler with authorize; the handler finds the token with
// tenant.FromContext.
func (s *Server) authed(h httpapi.Handler, anyNS bool, anyOf ...tenant.Permission) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		tok, err := s.authorize(r, anyNS, anyOf...)
		if err != nil {
			return err
		}
		return h(w, httpapi.WithToken(r, tok))
	}
}
