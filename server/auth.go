package server

import (
	"net/http"
	"slices"
	"strings"
)

// authorize authenticates the bearer token of a native request and checks that it belongs to the
// namespace of the path and carries at least one of anyOf.
func (s *Server) authorize(r *http.Request, anyOf ...Permission) (Token, error) {
	secret := bearer(r)
	if secret == "" {
		return Token{}, &Error{Code: CodeUnauthenticated, Message: "send the namespace token as Authorization: Bearer <token>"}
	}
	tok, err := s.tokens.Authenticate(r.Context(), secret)
	if err != nil {
		return Token{}, err
	}
	if ns := r.PathValue("ns"); tok.Namespace != ns {
		return Token{}, &Error{Code: CodePermissionDenied, Message: "the token belongs to namespace " + tok.Namespace + ", not " + ns}
	}
	if !slices.ContainsFunc(anyOf, tok.Allows) {
		names := make([]string, len(anyOf))
		for i, p := range anyOf {
			names[i] = string(p)
		}
		return Token{}, &Error{Code: CodePermissionDenied, Message: "the token lacks the " + strings.Join(names, " or ") + " permission"}
	}
	return tok, nil
}

// apiFunc is a native handler: it writes its success response and returns errors for writeError.
type apiFunc func(w http.ResponseWriter, r *http.Request) error

// api adapts an apiFunc to http.HandlerFunc.
func api(f apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			writeError(w, r, err)
		}
	}
}

// authed wraps a native handler with authorize.
func (s *Server) authed(f func(w http.ResponseWriter, r *http.Request, tok Token) error, anyOf ...Permission) http.HandlerFunc {
	return api(func(w http.ResponseWriter, r *http.Request) error {
		tok, err := s.authorize(r, anyOf...)
		if err != nil {
			return err
		}
		return f(w, r, tok)
	})
}
