package server

import (
	"cmp"
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/server/internal/authguard"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// setupAuthGuard makes the limit of failed authentications (server/internal/authguard) that
// every request's state carries, and reads the trusted proxies that name a request's client.
func (s *Server) setupAuthGuard() error {
	var err error
	if s.proxies, err = parseProxies(s.cfg.TrustedProxies); err != nil {
		return fmt.Errorf("server: trusted_proxies: %w", err)
	}
	s.guard, err = authguard.New(authguard.Config{
		Redis: s.rdb, Prefix: s.cfg.Prefix, FreeFailures: s.cfg.AuthFailureLimit, Window: cmp.Or(s.cfg.authFailureWindow, time.Minute),
		Backoff: s.cfg.authBackoff, MaxBackoff: s.cfg.AuthBackoffMax, Logger: s.log,
		OnFailure: func(k authguard.Kind) { s.metrics.authFailures.WithLabelValues(string(k)).Inc() },
		OnRefused: func(k authguard.Kind) { s.metrics.authRefused.WithLabelValues(string(k)).Inc() },
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// errAdminUnauthenticated is the answer to an admin request without the admin token.
var errAdminUnauthenticated = &httpapi.Error{Code: httpapi.CodeUnauthenticated, Message: "admin requests need Authorization: Bearer <admin token>"}

// checkAdmin checks the admin token (Bearer, or the password of Basic auth for lmstfy's admin
// tools) under the limit of failed authentications. A request with no credential guesses
// nothing and is not counted. Without a configured admin token every request passes:
// Config.validate only allows that on a loopback listener.
func (s *Server) checkAdmin(r *http.Request) error {
	if s.cfg.AdminToken == "" {
		return nil
	}
	got := bearer(r)
	if got == "" {
		if _, pw, ok := r.BasicAuth(); ok {
			got = pw
		}
	}
	if got == "" {
		return errAdminUnauthenticated
	}
	return httpapi.Authenticate(r, authguard.Admin, errAdminUnauthenticated, func(context.Context) (bool, error) {
		return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AdminToken)) == 1, nil
	})
}

// authorize authenticates the bearer token of a native request and checks that it belongs to the
// namespace of the path (unless anyNS: a route without {ns}) and carries at least one of anyOf.
// An unknown token counts against the client's failed authentications; a token of another
// namespace or without the permission is a real token, refused without counting.
func (s *Server) authorize(r *http.Request, anyNS bool, anyOf ...tenant.Permission) (tenant.Token, error) {
	secret := bearer(r)
	if secret == "" {
		return tenant.Token{}, &httpapi.Error{Code: httpapi.CodeUnauthenticated, Message: "send the namespace token as Authorization: Bearer <token>"}
	}
	tok, err := httpapi.AuthenticateToken(r, s.tokens, secret, tenant.ErrUnauthenticated)
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
