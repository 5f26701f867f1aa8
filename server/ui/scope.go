package ui

import (
	"context"
	"errors"
	"net/http"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// A dashboard session is opened with the admin token (it sees and does everything) or with a
// namespace token that carries the manage permission: such a session sees its namespace's queues
// and jobs and acts on them, and nothing else (no other namespace, no tokens, endpoints, rooms or
// other server-wide page). The scope is checked here, once for every request, from the session
// (never from a form field), so a page added later is refused to a scoped session until it is
// listed below.

// errOutOfScope answers a scoped session's request for another namespace or a server-wide page.
var errOutOfScope = &httpapi.Error{Code: httpapi.CodePermissionDenied, Message: "this session belongs to one namespace; log in with the admin token for the rest"}

// scopePages are the pages outside /ui/ns/{ns}/ that a scoped session may use: they show (or
// find) only its own namespace's queues.
var scopePages = map[string]bool{"/ui/": true, "/ui/api/overview": true, "/ui/logout": true, "/ui/find": true}

// inScope reports whether the scoped session sess may make request r: a path naming a namespace
// must name its own; other paths must be scopePages (find must look in its own namespace).
func inScope(r *http.Request, sess session) bool {
	if ns := r.PathValue("ns"); ns != "" {
		return ns == sess.ns
	}
	if r.URL.Path == "/ui/find" {
		return r.URL.Query().Get("ns") == sess.ns
	}
	if r.URL.Path == "/ui/schedules" { // its own namespace's schedules, the one it lists by default
		ns := r.URL.Query().Get("ns")
		return ns == "" || ns == sess.ns
	}
	return scopePages[r.URL.Path]
}

// tokenAlive reports whether the namespace token a scoped session was opened with still exists:
// revoking it ends its sessions.
func (u *UI) tokenAlive(ctx context.Context, sess session) (bool, error) {
	_, err := u.cfg.Tokens.Find(ctx, sess.ns, sess.tokenID)
	switch {
	case errors.Is(err, tenant.ErrNotFound) || errors.Is(err, tenant.ErrUnauthenticated):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// namespaceToken returns the token a login's secret names when it is a namespace token with the
// manage permission; ok is false for any other secret.
func (u *UI) namespaceToken(ctx context.Context, secret string) (tenant.Token, bool, error) {
	t, err := u.cfg.Tokens.Authenticate(ctx, secret)
	switch {
	case errors.Is(err, tenant.ErrUnauthenticated) || errors.Is(err, tenant.ErrNotFound):
		return tenant.Token{}, false, nil
	case err != nil:
		return tenant.Token{}, false, err
	}
	return t, t.Allows(tenant.PermManage), nil
}

// scopeOf is the namespace the request's session is limited to, "" for an admin session.
func scopeOf(ctx context.Context) string {
	sess, _ := ctx.Value(sessionKeyCtx{}).(session)
	return sess.ns
}
